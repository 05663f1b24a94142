package sim

import (
	"fmt"

	"github.com/fiomig/fiomig/nvmeof"
)

// Pod is a modelled fio pod: it issues I/O continuously to one namespace
// of its volume's subsystem through the multipath head on its host, and
// dies when no I/O completes for longer than Config.PodToleranceS or an I/O
// fails.
type Pod struct {
	Name string
	Vol  *Volume
	NSID int
	Host *Host

	Dead        bool
	DiedAtS     float64
	DeathReason string
	// Completed and Errors are cumulative I/O counts.
	Completed int64
	Errors    int64

	intervalDone   float64 // completions in the current io interval (fractional)
	intervalErrors int64
	queued         int64
	lastCompletion float64
	waiting        bool  // I/O is being requeued (reported once per pause)
	lostBlocks     int64 // lost writes fio's verify found, reported on the next io event
}

// ErrnoEILSEQ is fio's errno for a verify (checksum) failure.
const ErrnoEILSEQ = 84

// podTickS is the resolution of the pods' I/O model, seconds.
const podTickS = 0.1

// Pods are the modelled fio pods (Config.Pods): one per namespace of every
// subsystem (a PVC each); the pod of the k-th namespace runs on the
// subsystem's consumer k mod consumers (a single volume's pod on its first
// consumer), so the namespaces of one subsystem spread over its hosts.
func (w *World) Pods() []*Pod { return w.pods }

func (w *World) startPods() {
	for _, v := range w.volumes {
		for k, ns := range v.NSIDs {
			name := "fio-" + v.Name
			if len(v.NSIDs) > 1 {
				name = fmt.Sprintf("%s-ns%d", name, ns)
			}
			w.pods = append(w.pods, &Pod{Name: name, Vol: v, NSID: ns, Host: w.hosts[v.Consumers[k%len(v.Consumers)]], lastCompletion: w.now})
		}
	}
	w.schedulePodTick(w.now)
	w.scheduleIOReport()
}

func (w *World) schedulePodTick(last float64) {
	w.at(last+podTickS, func() {
		for _, p := range w.pods {
			w.podTick(p)
		}
		w.schedulePodTick(w.now)
	})
}

func (w *World) scheduleIOReport() {
	w.after(w.cfg.IOIntervalS, func() {
		for _, p := range w.pods {
			if p.Dead {
				continue
			}
			done := int64(p.intervalDone)
			p.intervalDone -= float64(done)
			e := Event{Kind: EventIO, Volume: p.Vol.Name, NQN: p.Vol.NQN, Host: p.Host.Name,
				Completed: done, Errors: p.intervalErrors, Queued: p.queued, Pod: p.Name, PodState: "running"}
			if p.lostBlocks > 0 {
				// fio --verify with continue_on_error: EILSEQ per bad block.
				e.Errno, e.VerifyErrors, e.Errors = ErrnoEILSEQ, p.lostBlocks, e.Errors+p.lostBlocks
				p.Errors += p.lostBlocks
				p.lostBlocks = 0
			}
			w.emit(e)
			p.intervalErrors = 0
		}
		w.scheduleIOReport()
	})
}

// ioStatus is what the multipath head does with I/O right now.
type ioStatus int

const (
	ioServed  ioStatus = iota // a usable path completes I/O
	ioHung                    // the chosen path looks usable but its target does not answer
	ioRequeue                 // no usable path; I/O waits (requeued)
	ioFail                    // no path may come back: I/O fails
	ioFailNS                  // the target no longer has the namespace: I/O fails (DNR)
)

// headStatus applies the kernel's multipath rule (default iopolicy numa,
// one NUMA node) to namespace nsid of subsystem nqn on h: what an I/O
// submitted now does (Linux 6.12 drivers/nvme/host/multipath.c
// nvme_ns_head_submit_bio, :450-493). The head's path is route's; I/O on
// it hangs while the path is silent (hostnet.go), is requeued when the
// target answers with an ANA error because the host has not yet read the
// change (multipath.c:95-103: ANA_PENDING, failover), and fails when the
// target no longer has the namespace: SPDK answers Invalid Namespace or
// Format with DNR (SPDK lib/nvmf/ctrlr.c:5343-5365 at 3230130e) and the
// host completes a DNR error to the caller without failover (core.c
// nvme_decide_disposition) — EIO. With no path, I/O is requeued while a
// controller with a leg is live, resetting or connecting and not
// failfast-expired (nvme_available_path, multipath.c:427-448), and fails
// otherwise ("no available path - failing I/O"); with no head (the
// namespace's last path went, core.c nvme_ns_remove) it fails too.
func (h *Host) headStatus(nqn string, nsid int) ioStatus {
	hd := h.headOf(nqn, nsid)
	if hd == nil {
		return ioFail
	}
	if l := hd.route(); l != nil {
		c := l.ctrl
		switch {
		case c.silent != nil:
			return ioHung
		case c.ts == nil:
			return ioRequeue // closed by the target: error recovery starts now
		case !containsInt(c.ts.NSIDs, nsid):
			return ioFailNS
		case !accessibleANA(c.ts.anaOf(c.port)):
			return ioRequeue
		}
		return ioServed
	}
	for _, l := range hd.sibs {
		c := l.ctrl
		switch c.State {
		case nvmeof.StateLive, nvmeof.StateResetting, nvmeof.StateConnecting:
			if !c.failfastExpired {
				return ioRequeue
			}
		}
	}
	return ioFail
}

// route is nvme_numa_path (Linux 6.12 drivers/nvme/host/multipath.c:402-413):
// the head keeps its current path while that path's controller is live and
// its leg optimized — the leg as the host last read it, so a silent path whose
// node moved the ANA state elsewhere stays current — and otherwise picks
// anew (__nvme_find_path, multipath.c:260-298): the first path in sibling
// order, skipping disabled ones (controller neither live nor deleting,
// multipath.c:243-258), that is optimized, else the first non-optimized;
// it caches what it found (and keeps the old pointer when it found
// nothing). nil when no path is usable. Called for every I/O submission
// (the pods' ticks).
func (hd *head) route() *leg {
	if l := hd.cur; l != nil && l.ctrl.State == nvmeof.StateLive && l.ana == nvmeof.ANAOptimized {
		return l
	}
	var found, fallback *leg
	for _, l := range hd.sibs {
		if st := l.ctrl.State; st != nvmeof.StateLive && st != nvmeof.StateDeleting {
			continue
		}
		switch l.ana {
		case nvmeof.ANAOptimized:
			if found == nil {
				found = l
			}
		case nvmeof.ANANonOptimized:
			if fallback == nil {
				fallback = l
			}
		}
	}
	if found == nil {
		found = fallback
	}
	if found != nil {
		hd.cur = found
	}
	return found
}

func accessibleANA(a nvmeof.ANAState) bool {
	return a == nvmeof.ANAOptimized || a == nvmeof.ANANonOptimized
}

// headOf is h's multipath head of namespace nsid of nqn, nil if none.
func (h *Host) headOf(nqn string, nsid int) *head {
	s := h.subsystemOf(nqn)
	if s == nil {
		return nil
	}
	for _, hd := range s.heads {
		if hd.nsid == nsid {
			return hd
		}
	}
	return nil
}

func (w *World) podTick(p *Pod) {
	if p.Dead {
		return
	}
	h := p.Host
	nsid := p.NSID
	switch h.headStatus(p.Vol.NQN, nsid) {
	case ioServed:
		n := w.cfg.PodIOPS * podTickS
		p.intervalDone += n
		p.Completed += int64(n)
		p.lastCompletion = w.now
		p.queued = 0
		p.waiting = false
	case ioHung:
		p.queued = int64(w.cfg.PodIODepth)
	case ioRequeue:
		p.queued = int64(w.cfg.PodIODepth)
		if !p.waiting {
			p.waiting = true
			if head := h.headName(p.Vol.NQN, nsid); head != "" {
				h.kernelLog(head, "no usable path - requeuing I/O")
			}
		}
	case ioFailNS:
		errs := int64(w.cfg.PodIODepth)
		p.Errors += errs
		p.intervalErrors += errs
		p.queued = 0
		w.killPod(p, "I/O error (EIO): the target no longer has the namespace (Invalid Namespace, DNR)")
		return
	case ioFail:
		errs := int64(w.cfg.PodIODepth)
		p.Errors += errs
		p.intervalErrors += errs
		p.queued = 0
		w.killPod(p, "I/O error (EIO): no path to the namespace can come back")
		return
	}
	if idle := w.now - p.lastCompletion; idle > w.cfg.PodToleranceS+1e-9 {
		w.killPod(p, fmt.Sprintf("no I/O completed for %.1f s (tolerance %.1f s)", idle, w.cfg.PodToleranceS))
	}
}

func (w *World) killPod(p *Pod, reason string) {
	p.Dead, p.DiedAtS, p.DeathReason = true, w.now, reason
	done := int64(p.intervalDone)
	p.intervalDone = 0
	w.emit(Event{Kind: EventIO, Volume: p.Vol.Name, NQN: p.Vol.NQN, Host: p.Host.Name,
		Completed: done, Errors: p.intervalErrors, Queued: p.queued, Pod: p.Name, PodState: "killed", Reason: reason})
	p.intervalErrors = 0
}

// headName is the multipath head of namespace nsid of nqn on h ("" if none).
func (h *Host) headName(nqn string, nsid int) string {
	for _, s := range h.subsystems {
		if s.NQN != nqn {
			continue
		}
		for _, hd := range s.heads {
			if hd.nsid == nsid {
				return hd.name(s)
			}
		}
	}
	return ""
}

package sim

// IOStatus is what a host's multipath head does with an I/O submitted to
// one namespace right now (kernel drivers/nvme/host/multipath.c
// nvme_ns_head_submit_bio).
type IOStatus int

// Multipath head outcomes (the exported face of the pods' I/O model).
const (
	// IOServed: a live controller with an optimized (else non-optimized)
	// leg takes the I/O (nvme_find_path found a path).
	IOServed IOStatus = IOStatus(ioServed)
	// IOHung: the chosen path looks usable but its target does not answer;
	// the I/O sits on it until the host notices (keep-alive or I/O timeout).
	IOHung IOStatus = IOStatus(ioHung)
	// IORequeue: no usable path, but some controller with a leg is live,
	// resetting or connecting and not failfast-expired
	// (nvme_available_path): the I/O is requeued and waits.
	IORequeue IOStatus = IOStatus(ioRequeue)
	// IOFail: no path can come back; the head fails the I/O
	// ("no available path - failing I/O", BLK_STS_IOERR, so EIO) — or the
	// path's target no longer has the namespace and answers with DNR.
	IOFail IOStatus = IOStatus(ioFail)
)

// String names the outcome: "served", "hung", "requeue" or "fail".
func (s IOStatus) String() string {
	switch s {
	case IOServed:
		return "served"
	case IOHung:
		return "hung"
	case IORequeue:
		return "requeue"
	case IOFail:
		return "fail"
	}
	return "unknown"
}

// HeadIO applies the kernel's multipath rule (the one the modelled fio pods
// use, see Pod) to namespace nsid of subsystem nqn on h: what an I/O
// submitted now does. Like a submission in the kernel it may update the
// head's cached current path (route), so callers on another goroutine
// than the world's driver must exclude the driver and each other
// (backend/sim holds a lock around the world for that).
func (h *Host) HeadIO(nqn string, nsid int) IOStatus {
	s := h.headStatus(nqn, nsid)
	if s == ioFailNS {
		s = ioFail
	}
	return IOStatus(s)
}

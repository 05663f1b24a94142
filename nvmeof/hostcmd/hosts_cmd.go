package hostcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
)

const hostsUsage = `Usage: PROG hosts [-o table|json] [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN]

Lists what one kernel's NVMe-oF initiator shows, read with the same code
the harness samples hosts with (nvmeof.ReadSysfs), grouped like
"nvme list-subsys": per host NQN (several Kubernetes nodes can share one
kernel), its subsystems (kernel instance, NQN, namespaces), their
controllers (transport, address, state, reconnect timers) and each
controller's path legs with their NSID and ANA state. It also says whether
native multipath is on: with nvme_core multipath=N there are no legs and no
ANA states, so no pause window or cutover can be judged on that host.

Secret attributes (dhchap_secret, dhchap_ctrl_secret, tls_key) are never
read or printed. --sys-root and --capture are either/or.

Exit status: 0 listed (also a host without NVMe: an empty list), 2 bad
usage or input: a bad flag, an unreadable root, a --sys-root with no class
directory (not a sysfs mount), an empty, malformed (the message names the
line and field) or truncated capture, or no controller with --hostnqn.
`

// hostsJSON is "fiomig hosts -o json": the multipath mode and, per host
// NQN, its subsystems.
type hostsJSON struct {
	Multipath string          `json:"multipath"` // on, off or unknown
	Hosts     []hostEntryJSON `json:"hosts"`
}

type hostEntryJSON struct {
	HostNQN    string          `json:"hostnqn"`
	HostID     string          `json:"hostid,omitempty"`
	Subsystems []subsystemJSON `json:"subsystems"`
}

type subsystemJSON struct {
	Name        string           `json:"name"` // nvme-subsysS ("" for controllers no subsystem directory lists)
	NQN         string           `json:"nqn"`
	Namespaces  []namespaceJSON  `json:"namespaces"`
	Controllers []controllerJSON `json:"controllers"`
}

type namespaceJSON struct {
	NSID       int    `json:"nsid"`
	Head       string `json:"head"`
	Controller string `json:"controller,omitempty"` // set for a namespace disk of its own (multipath off)
}

type controllerJSON struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// Address is the address attribute as the kernel prints it
	// (traddr=...,trsvcid=...[,host_traddr=...][,host_iface=...][,src_addr=...]).
	Address string `json:"address"`
	// Endpoint is the canonical ip:port (IPv6 bracketed), "" when not an IP.
	Endpoint string `json:"endpoint,omitempty"`
	State    string `json:"state"`
	Cntlid   int    `json:"cntlid"`
	// Reconnect timers in seconds, -1 for "off", 0 when absent.
	CtrlLossTmo    int       `json:"ctrl_loss_tmo"`
	ReconnectDelay int       `json:"reconnect_delay"`
	FastIOFailTmo  int       `json:"fast_io_fail_tmo"`
	Legs           []legJSON `json:"legs"`
}

type legJSON struct {
	Name     string `json:"name"`
	NSID     int    `json:"nsid"`
	ANAState string `json:"ana_state"`
	ANAGroup int    `json:"ana_group,omitempty"`
	// Accessible: I/O may use this leg now (live controller, optimized or
	// non-optimized).
	Accessible bool `json:"accessible"`
}

// hostsView groups st by host NQN, in the order nvme list-subsys does:
// hosts sorted, subsystems by instance, controllers by instance.
func hostsView(st nvmeof.HostState) hostsJSON {
	mp := string(st.Multipath)
	if mp == "" {
		mp = "unknown"
	}
	out := hostsJSON{Multipath: mp, Hosts: []hostEntryJSON{}}
	byHost := map[string]*hostEntryJSON{}
	var order []string
	for _, s := range st.Subsystems {
		per := map[string]*subsystemJSON{}
		var hosts []string
		for _, c := range s.Controllers {
			if _, ok := byHost[c.HostNQN]; !ok {
				byHost[c.HostNQN] = &hostEntryJSON{HostNQN: c.HostNQN, HostID: c.HostID, Subsystems: []subsystemJSON{}}
				order = append(order, c.HostNQN)
			}
			sj, ok := per[c.HostNQN]
			if !ok {
				sj = &subsystemJSON{NQN: s.NQN, Namespaces: []namespaceJSON{}, Controllers: []controllerJSON{}}
				if s.Instance >= 0 {
					sj.Name = fmt.Sprintf("nvme-subsys%d", s.Instance)
				}
				for _, n := range s.Namespaces {
					if n.Controller == "" || ownedBy(s, n.Controller, c.HostNQN) {
						sj.Namespaces = append(sj.Namespaces, namespaceJSON{NSID: n.NSID, Head: n.Head, Controller: n.Controller})
					}
				}
				per[c.HostNQN] = sj
				hosts = append(hosts, c.HostNQN)
			}
			cj := controllerJSON{Name: c.Name, Transport: c.Transport, Address: addressAttr(c), Endpoint: c.Endpoint(),
				State: string(c.State), Cntlid: c.Cntlid, CtrlLossTmo: c.CtrlLossTmo, ReconnectDelay: c.ReconnectDelay,
				FastIOFailTmo: c.FastIOFailTmo, Legs: []legJSON{}}
			for _, l := range c.Legs {
				cj.Legs = append(cj.Legs, legJSON{Name: l.Name, NSID: l.NSID, ANAState: string(l.ANA), ANAGroup: l.ANAGroup, Accessible: c.Accessible(l)})
			}
			sj.Controllers = append(sj.Controllers, cj)
		}
		for _, h := range hosts {
			byHost[h].Subsystems = append(byHost[h].Subsystems, *per[h])
		}
	}
	sort.Strings(order)
	for _, h := range order {
		out.Hosts = append(out.Hosts, *byHost[h])
	}
	return out
}

// ownedBy reports whether controller name of s belongs to host hostNQN.
func ownedBy(s nvmeof.Subsystem, name, hostNQN string) bool {
	for _, c := range s.Controllers {
		if c.Name == name {
			return c.HostNQN == hostNQN
		}
	}
	return false
}

// addressAttr renders c's address as the kernel's address attribute; a
// PCIe controller's address is its PCI function.
func addressAttr(c nvmeof.Controller) string {
	if c.Transport == "pcie" {
		return c.Address.Traddr
	}
	return c.Address.String()
}

func hostsCmd(prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " hosts"
	var hf hostFlags
	fs := newFlagSet(prog, "hosts", hostsUsage)
	hf.register(fs, false)
	if code, stop := ParseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if err := hf.validate(fs); err != nil {
		return fail(stderr, name, err)
	}
	src, err := hf.load()
	if err != nil {
		return fail(stderr, name, err)
	}
	v := hostsView(src.st)
	if hf.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fail(stderr, name, err)
		}
		return exitPass
	}
	fmt.Fprintf(stdout, "native multipath: %s%s\n", v.Multipath, multipathNote(src.st.Multipath))
	if len(v.Hosts) == 0 {
		fmt.Fprintf(stdout, "no NVMe controllers %s\n", src.where)
	}
	for _, h := range v.Hosts {
		fmt.Fprintf(stdout, "\nhost %s", h.HostNQN)
		if h.HostID != "" {
			fmt.Fprintf(stdout, " (hostid %s)", h.HostID)
		}
		fmt.Fprintln(stdout)
		for _, s := range h.Subsystems {
			name := s.Name
			if name == "" {
				name = "(no subsystem directory)"
			}
			var nss []string
			for _, n := range s.Namespaces {
				ns := fmt.Sprintf("%d (%s", n.NSID, n.Head)
				if n.Controller != "" {
					ns += " on " + n.Controller
				}
				nss = append(nss, ns+")")
			}
			if len(nss) == 0 {
				nss = []string{"none"}
			}
			fmt.Fprintf(stdout, "  %s  NQN=%s\n    namespaces: %s\n", name, s.NQN, strings.Join(nss, ", "))
			for _, c := range s.Controllers {
				fmt.Fprintf(stdout, "    +- %s %s %s %s  ctrl_loss_tmo=%s reconnect_delay=%s fast_io_fail_tmo=%s\n",
					c.Name, c.Transport, c.Address, c.State, secs(c.CtrlLossTmo), secs(c.ReconnectDelay), secs(c.FastIOFailTmo))
				if len(c.Legs) == 0 {
					fmt.Fprintln(stdout, "       no path leg: serves no namespace")
				}
				for _, l := range c.Legs {
					use := ""
					if !l.Accessible {
						use = " (no I/O)"
					}
					fmt.Fprintf(stdout, "       %s nsid %d %s%s\n", l.Name, l.NSID, l.ANAState, use)
				}
			}
		}
	}
	return exitPass
}

// multipathNote explains a multipath mode in the table header.
func multipathNote(m nvmeof.MultipathMode) string {
	switch m {
	case nvmeof.MultipathOff:
		return " (nvme_core multipath=N: no path legs, no ANA states; no pause window or cutover can be judged on this host)"
	case nvmeof.MultipathUnknown:
		return " (" + nvmeof.MultipathParam + " not present; the tree shows nothing that tells)"
	}
	return ""
}

// secs prints a timer in seconds, "off" for -1, "-" when absent.
func secs(v int) string {
	switch {
	case v < 0:
		return "off"
	case v == 0:
		return "-"
	}
	return fmt.Sprintf("%ds", v)
}

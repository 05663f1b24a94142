package nvmeof

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ControllerState is a controller's kernel state (sysfs class/nvme/nvmeN/state;
// kernel drivers/nvme/host/core.c nvme_sysfs_show_state).
type ControllerState string

// Kernel controller states; StateUnknown stands for any string the kernel
// may print that this package does not know.
const (
	StateNew          ControllerState = "new"
	StateLive         ControllerState = "live"
	StateResetting    ControllerState = "resetting"
	StateConnecting   ControllerState = "connecting"
	StateDeleting     ControllerState = "deleting"
	StateDeletingNoIO ControllerState = "deleting (no IO)"
	StateDead         ControllerState = "dead"
	StateUnknown      ControllerState = "unknown"
)

// ANAState is a path leg's ANA state (sysfs nvmeScCnH/ana_state; kernel
// drivers/nvme/host/multipath.c nvme_ana_state_names).
type ANAState string

// ANA states; ANAUnknown stands for any string this package does not know.
const (
	ANAOptimized      ANAState = "optimized"
	ANANonOptimized   ANAState = "non-optimized"
	ANAInaccessible   ANAState = "inaccessible"
	ANAPersistentLoss ANAState = "persistent-loss"
	ANAChange         ANAState = "change"
	ANAUnknown        ANAState = "unknown"
)

// Accessible reports whether I/O may be sent over a leg in state a
// (optimized or non-optimized).
func (a ANAState) Accessible() bool { return a == ANAOptimized || a == ANANonOptimized }

// HostState is everything one host's kernel shows of NVMe-oF: its subsystems
// with their controllers, legs and namespaces. It is what ReadSysfs returns
// and what Inspect, ReleaseMigrationPaths and ReapDeadControllers judge.
type HostState struct {
	Subsystems []Subsystem
	// Multipath is whether the kernel's native NVMe multipath is on
	// (module/nvme_core/parameters/multipath); see MultipathMode.
	Multipath MultipathMode
}

// MultipathMode is the state of the kernel's native NVMe multipath
// (nvme_core.multipath; kernel drivers/nvme/host/multipath.c).
type MultipathMode string

// Multipath modes. With multipath off the kernel creates no multipath head
// and no path legs: every controller carries its own namespace disk and
// there are no ANA states to read, so no pause window or cutover can be
// told from sysfs.
const (
	// MultipathOn: module/nvme_core/parameters/multipath reads "Y".
	MultipathOn MultipathMode = "on"
	// MultipathOff: the parameter reads "N", or (without the parameter
	// file, as in a capture) a controller carries a namespace disk nvmeSnH
	// of its own, which the kernel creates only with multipath off.
	MultipathOff MultipathMode = "off"
	// MultipathUnknown: no parameter file and nothing in the tree to tell.
	MultipathUnknown MultipathMode = ""
)

// MultipathParam is the sysfs file (relative to the sys root) holding the
// nvme_core module's multipath parameter: "Y" or "N".
const MultipathParam = "module/nvme_core/parameters/multipath"

// Subsystem is one kernel subsystem instance (class/nvme-subsystem/nvme-subsysS).
type Subsystem struct {
	Instance    int          // S of nvme-subsysS
	NQN         string       // subsysnqn
	Controllers []Controller // sorted by Instance
	Namespaces  []Namespace  // multipath heads nvmeSnH, sorted by NSID
}

// Namespace is one multipath head (class/nvme-subsystem/nvme-subsysS/nvmeSnH).
//
// With native multipath off (nvme_core.multipath=N) the kernel creates no
// heads; each controller then carries its own namespace disk nvmeNnM directly
// under class/nvme/nvmeN. Such a namespace is listed here too, with
// Controller set to the controller it hangs under, and it has no legs.
type Namespace struct {
	Head       string // "nvme0n1"
	NSID       int    // from the head's nsid file
	Controller string // "" for a multipath head; the owning controller for a non-multipath namespace disk
}

// Controller is one controller directory class/nvme/nvmeN.
type Controller struct {
	Name           string          // "nvme3"
	Instance       int             // N of nvmeN
	State          ControllerState // state
	Transport      string          // transport: tcp, rdma, fc, loop
	Address        Address         // address
	NQN            string          // subsysnqn
	Cntlid         int             // cntlid
	HostNQN        string          // hostnqn
	HostID         string          // hostid
	CtrlLossTmo    int             // ctrl_loss_tmo in seconds, -1 for "off"; 0 when the file is absent (non-fabrics)
	ReconnectDelay int             // reconnect_delay in seconds, -1 for "off"; 0 when the file is absent
	FastIOFailTmo  int             // fast_io_fail_tmo in seconds, -1 for "off"; 0 when the file is absent
	Legs           []Leg           // path legs nvmeScCnH under this controller, sorted by NSID
}

// Leg is one path of a controller to a namespace (class/nvme/nvmeN/nvmeScCnH).
type Leg struct {
	Name     string   // "nvme0c1n2"
	NSID     int      // nsid file (never parsed from Name)
	ANA      ANAState // ana_state; optimized when the file is absent (no ANA: kernel multipath.c treats the path as optimized)
	ANAGroup int      // ana_grpid; 0 when the file is absent
}

// Address is a controller's parsed address file:
// "traddr=A,trsvcid=P[,host_traddr=H][,host_iface=I][,src_addr=S]".
type Address struct {
	Traddr     string
	Trsvcid    string
	HostTraddr string
	HostIface  string
	SrcAddr    string // only while the admin queue is up
}

// ParseState maps the content of a controller's state file to a
// ControllerState. Surrounding white space is ignored; any string the kernel
// may print that is not listed above gives StateUnknown (never an error).
func ParseState(s string) ControllerState {
	switch st := ControllerState(strings.TrimSpace(s)); st {
	case StateNew, StateLive, StateResetting, StateConnecting, StateDeleting, StateDeletingNoIO, StateDead:
		return st
	}
	return StateUnknown
}

// ParseANAState maps the content of a leg's ana_state file to an ANAState.
// Surrounding white space is ignored; unknown strings give ANAUnknown.
func ParseANAState(s string) ANAState {
	switch a := ANAState(strings.TrimSpace(s)); a {
	case ANAOptimized, ANANonOptimized, ANAInaccessible, ANAPersistentLoss, ANAChange:
		return a
	}
	return ANAUnknown
}

// ControllerStates are the kernel's controller state strings, in the order
// of drivers/nvme/host/core.c nvme_sysfs_show_state.
var ControllerStates = []ControllerState{StateNew, StateLive, StateResetting, StateConnecting, StateDeleting, StateDeletingNoIO, StateDead}

// ANAStates are the kernel's ANA state strings (multipath.c
// nvme_ana_state_names).
var ANAStates = []ANAState{ANAOptimized, ANANonOptimized, ANAInaccessible, ANAPersistentLoss, ANAChange}

// ErrUnknownState is wrapped by ParseControllerState and ParseANA for a
// string that is not one of the kernel's states.
var ErrUnknownState = errors.New("unknown state")

// ParseControllerState is ParseState that refuses what it does not know:
// the error (wrapping ErrUnknownState) quotes s and lists the known states.
// ReadSysfs reads every state file with it.
func ParseControllerState(s string) (ControllerState, error) {
	st := ParseState(s)
	if st == StateUnknown {
		return st, fmt.Errorf("%w %q: not a controller state (known: %s)", ErrUnknownState, clip(strings.TrimSpace(s)), joinStates(ControllerStates))
	}
	return st, nil
}

// ParseANA is ParseANAState that refuses what it does not know: the error
// (wrapping ErrUnknownState) quotes s and lists the known ANA states.
// ReadSysfs reads every ana_state file with it.
func ParseANA(s string) (ANAState, error) {
	a := ParseANAState(s)
	if a == ANAUnknown {
		return a, fmt.Errorf("%w %q: not an ANA state (known: %s)", ErrUnknownState, clip(strings.TrimSpace(s)), joinStates(ANAStates))
	}
	return a, nil
}

func joinStates[S ~string](states []S) string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// Deleting reports whether the controller is being torn down (deleting or
// deleting (no IO)): the kernel no longer counts it for "already connected"
// and it is about to vanish from sysfs.
func (s ControllerState) Deleting() bool { return s == StateDeleting || s == StateDeletingNoIO }

// Endpoint is the controller's canonical "ip:port" (see Address.Endpoint).
func (c Controller) Endpoint() string { return c.Address.Endpoint() }

// Accessible reports whether I/O may use leg l of controller c right now: the
// controller is live and the leg is optimized or non-optimized. A leg of a
// connecting or resetting controller may still show its last ANA state, but
// carries no I/O (kernel multipath.c nvme_path_is_disabled).
func (c Controller) Accessible(l Leg) bool { return c.State == StateLive && l.ANA.Accessible() }

// Serving reports whether c has at least one accessible leg.
func (c Controller) Serving() bool {
	for _, l := range c.Legs {
		if c.Accessible(l) {
			return true
		}
	}
	return false
}

// LegTo returns c's leg to namespace nsid, if it has one.
func (c Controller) LegTo(nsid int) (Leg, bool) {
	for _, l := range c.Legs {
		if l.NSID == nsid {
			return l, true
		}
	}
	return Leg{}, false
}

// NSIDs returns the subsystem's namespace IDs in ascending order, without
// duplicates.
func (s Subsystem) NSIDs() []int {
	var ids []int
	for _, n := range s.Namespaces {
		if len(ids) == 0 || ids[len(ids)-1] != n.NSID {
			ids = append(ids, n.NSID)
		}
	}
	return ids
}

// SubsystemsByNQN returns every subsystem instance whose NQN is nqn, in instance
// order. More than one is the ambiguous-head case.
func (h HostState) SubsystemsByNQN(nqn string) []Subsystem {
	var out []Subsystem
	for _, s := range h.Subsystems {
		if s.NQN == nqn {
			out = append(out, s)
		}
	}
	return out
}

// NQNs returns the distinct subsystem NQNs of h, sorted.
func (h HostState) NQNs() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range h.Subsystems {
		if !seen[s.NQN] {
			seen[s.NQN] = true
			out = append(out, s.NQN)
		}
	}
	sort.Strings(out)
	return out
}

// Controllers returns every controller of h, in subsystem then instance order.
func (h HostState) Controllers() []Controller {
	var out []Controller
	for _, s := range h.Subsystems {
		out = append(out, s.Controllers...)
	}
	return out
}

package nvmeof

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
}

// Subsystem is one kernel subsystem instance (class/nvme-subsystem/nvme-subsysS).
type Subsystem struct {
	Instance    int          // S of nvme-subsysS
	NQN         string       // subsysnqn
	Controllers []Controller // sorted by Instance
	Namespaces  []Namespace  // multipath heads nvmeSnH, sorted by NSID
}

// Namespace is one multipath head (class/nvme-subsystem/nvme-subsysS/nvmeSnH).
type Namespace struct {
	Head string // "nvme0n1"
	NSID int    // from the head's nsid file
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
	CtrlLossTmo    int             // ctrl_loss_tmo in seconds, -1 for "off"
	ReconnectDelay int             // reconnect_delay in seconds, -1 for "off"
	FastIOFailTmo  int             // fast_io_fail_tmo in seconds, -1 for "off"
	Legs           []Leg           // path legs nvmeScCnH under this controller, sorted by NSID
}

// Leg is one path of a controller to a namespace (class/nvme/nvmeN/nvmeScCnH).
type Leg struct {
	Name     string   // "nvme0c1n2"
	NSID     int      // nsid file (never parsed from Name)
	ANA      ANAState // ana_state
	ANAGroup int      // ana_grpid
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

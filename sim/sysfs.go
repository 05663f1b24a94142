package sim

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"strconv"
	"strings"
)

// Sysfs is the host's kernel NVMe state at Now rendered as a sysfs tree
// (root = the "sys" directory) in the kernel's own layout:
//
//	class/nvme/nvmeN -> ../../devices/virtual/nvme-fabrics/ctl/nvmeN        (symlink)
//	class/nvme-subsystem/nvme-subsysS -> ../../devices/virtual/nvme-subsystem/nvme-subsysS
//	class/block/nvmeSnH -> ../../devices/virtual/nvme-subsystem/nvme-subsysS/nvmeSnH
//	devices/virtual/nvme-fabrics/ctl/nvmeN/{state,address,transport,subsysnqn,cntlid,hostnqn,
//	    hostid,ctrl_loss_tmo,reconnect_delay,fast_io_fail_tmo,kato,model,serial,firmware_rev,...}
//	devices/virtual/nvme-fabrics/ctl/nvmeN/nvmeScNnH/{ana_state,ana_grpid,nsid,size,queue/logical_block_size,...}
//	devices/virtual/nvme-subsystem/nvme-subsysS/{subsysnqn,iopolicy,model,serial,firmware_rev,subsystype}
//	devices/virtual/nvme-subsystem/nvme-subsysS/nvmeN -> ../../nvme-fabrics/ctl/nvmeN
//	devices/virtual/nvme-subsystem/nvme-subsysS/nvmeSnH/{nsid,size,queue/logical_block_size,...}
//
// Values end in a newline as sysfs attributes do; ctrl_loss_tmo shows
// max_reconnects × reconnect_delay, and -1 values print "off". The tree is
// an immutable snapshot: it is rebuilt only after the host's state changed
// and is cheap to hand out otherwise.
func (h *Host) Sysfs() fs.FS {
	if h.cached && h.cacheVer == h.version {
		return h.cache
	}
	h.cache = h.render(true)
	h.cacheVer = h.version
	h.cached = true
	h.sysfsBuilds++
	return h.cache
}

// SysfsBuilds is how many times the host's tree was rebuilt (a cost
// figure for benchmarks).
func (h *Host) SysfsBuilds() int { return h.sysfsBuilds }

const (
	ctlDir    = "devices/virtual/nvme-fabrics/ctl"
	subsysDir = "devices/virtual/nvme-subsystem"
	// Device majors as a typical kernel assigns them (dynamic majors).
	majorCtrl  = 238
	majorBlock = 259
	// logicalBlockSize is the namespaces' LBA size in bytes.
	logicalBlockSize = 512
	firmwareRev      = "25.01"
	serialNumber     = "ha"
)

func onOff(v int) string {
	if v == -1 {
		return "off"
	}
	return strconv.Itoa(v)
}

// pad pads s with spaces to n characters (NVMe identify strings are
// space-padded and sysfs shows them whole).
func pad(s string, n int) string {
	if len(s) >= n {
		return s[:n]
	}
	return s + strings.Repeat(" ", n-len(s))
}

// modelOf is the subsystem's model number: simplyblock reports the lvol's
// uuid (the last ':'-separated part of the NQN).
func modelOf(nqn string) string {
	if i := strings.LastIndexByte(nqn, ':'); i >= 0 {
		return nqn[i+1:]
	}
	return nqn
}

// nsUUID is a namespace's uuid, derived from its subsystem and the NSID its
// volume gave it (head.ident: the same as the NSID unless a re-add moved
// the namespace to another NSID).
func nsUUID(nqn string, nsid int) string {
	f := fnv.New64a()
	f.Write([]byte(nqn))
	f.Write([]byte{byte(nsid), byte(nsid >> 8)})
	x := f.Sum64()
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(x>>32), uint16(x>>16), uint16(x)&0xfff, nsid&0xfff, x&0xffffffffffff)
}

func addressString(c *Ctrl) string {
	var b strings.Builder
	b.WriteString("traddr=" + c.Spec.Traddr + ",trsvcid=" + c.Spec.Trsvcid)
	if c.Spec.HostTraddr != "" {
		b.WriteString(",host_traddr=" + c.Spec.HostTraddr)
	}
	if c.Spec.HostIface != "" {
		b.WriteString(",host_iface=" + c.Spec.HostIface)
	}
	if c.srcAddr != "" {
		b.WriteString(",src_addr=" + c.srcAddr)
	}
	return b.String()
}

// render builds the tree; writeOnly adds the write-only trigger files
// (delete_controller, reset_controller, rescan_controller) whose Open fails
// with fs.ErrPermission as on a real /sys (kernfs has no show operation).
func (h *Host) render(writeOnly bool) *treeFS {
	b := newTreeBuilder()
	// The last render's scratch buffers (build copies the text out).
	b.text, b.pending = h.scratch.text[:0], h.scratch.pending[:0]
	defer func() {
		clear(b.pending)
		h.scratch.text, h.scratch.pending = b.text[:0], b.pending[:0]
	}()
	b.dir("class/nvme")
	b.dir("class/nvme-subsystem")
	b.dir("class/block")
	b.dir(ctlDir)
	b.dir(subsysDir)
	b.symlink("class/nvme-fabrics/ctl", "../../"+ctlDir)
	// A controller whose directory would show exactly what it showed in
	// the last render (same key: every attribute and leg as written) gets
	// that render's directory node, shared (a tree is immutable once
	// built); the others are built anew and cached after build.
	ctrls := make(map[*Ctrl]ctrlDir, len(h.ctrls))
	var built []*Ctrl
	key := h.scratch.key[:0]
	for _, c := range h.ctrls {
		name := c.Name()
		dir := ctlDir + "/" + name
		b.symlink("class/nvme/"+name, "../../"+dir)
		key = h.ctrlKey(key[:0], c, name, writeOnly)
		if old, ok := h.ctrlDirs[c]; ok && old.key == string(key) {
			b.sharedEntry(ctlDir, old.node)
			ctrls[c] = old
			continue
		}
		ctrls[c] = ctrlDir{key: string(key)}
		built = append(built, c)
		w := b.attrs(dir)
		h.ctrlAttrs(c, name, w)
		if writeOnly {
			for _, f := range []string{"delete_controller", "reset_controller", "rescan_controller"} {
				b.fileMode(dir+"/"+f, "", 0o200)
			}
		}
		for _, l := range c.legs {
			ldir := dir + "/" + l.name(c)
			legAttrs(l, b.attrs(ldir))
			b.shared(ldir, h.nsAttrNodes(c.Spec.NQN, l.nsid, l.head.ident, h.sizeOf(c.Spec.NQN), l.head.diskseq))
		}
	}
	h.scratch.key = key
	for _, s := range h.subsystems {
		sname := fmt.Sprintf("nvme-subsys%d", s.Instance)
		dir := subsysDir + "/" + sname
		b.symlink("class/nvme-subsystem/"+sname, "../../"+dir)
		w := b.attrs(dir)
		w("subsysnqn", s.NQN)
		w("iopolicy", "numa")
		w("model", pad(modelOf(s.NQN), 40))
		w("serial", pad(serialNumber, 20))
		w("firmware_rev", pad(firmwareRev, 8))
		w("subsystype", "nvm")
		w("uevent", "")
		for _, c := range s.ctrls {
			b.symlink(dir+"/"+c.Name(), "../../nvme-fabrics/ctl/"+c.Name())
		}
		for _, hd := range s.heads {
			hname := hd.name(s)
			hdir := dir + "/" + hname
			b.symlink("class/block/"+hname, "../../"+hdir)
			hw := b.attrs(hdir)
			hw("dev", fmt.Sprintf("%d:%d", majorBlock, hd.minor))
			hw("hidden", "0")
			hw("uevent", fmt.Sprintf("MAJOR=%d\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=disk\nDISKSEQ=%d", majorBlock, hd.minor, hname, hd.diskseq))
			b.shared(hdir, h.nsAttrNodes(s.NQN, hd.nsid, hd.ident, h.sizeOf(s.NQN), hd.diskseq))
		}
	}
	t := b.build()
	for _, c := range built {
		e := ctrls[c]
		e.node = t.dirs[ctlDir+"/"+c.Name()]
		ctrls[c] = e
	}
	h.ctrlDirs = ctrls
	return t
}

// ctrlDir is a controller's directory node as last rendered, and the key
// (ctrlKey) of what it shows.
type ctrlDir struct {
	key  string
	node *tnode
}

// ctrlKey appends to key everything controller c's directory shows: its
// attributes as ctrlAttrs writes them, whether the write-only triggers
// are there, and each leg's name, attributes (legAttrs) and namespace
// (nsAttrNodes' arguments).
func (h *Host) ctrlKey(key []byte, c *Ctrl, name string, writeOnly bool) []byte {
	w := func(f, v string) {
		key = append(append(append(append(key, f...), 0), v...), 0)
	}
	h.ctrlAttrs(c, name, w)
	if writeOnly {
		key = append(key, 1)
	}
	for _, l := range c.legs {
		key = append(append(key, 2), l.name(c)...)
		legAttrs(l, w)
		key = fmt.Appendf(key, "%s\x00%d\x00%d\x00%d\x00%d\x00", c.Spec.NQN, l.nsid, l.head.ident, h.sizeOf(c.Spec.NQN), l.head.diskseq)
	}
	return key
}

// ctrlAttrs writes controller c's attribute files (name is c.Name()).
func (h *Host) ctrlAttrs(c *Ctrl, name string, w func(f, v string)) {
	w("state", string(c.State))
	w("address", addressString(c))
	w("transport", c.Spec.Transport)
	w("subsysnqn", c.Spec.NQN)
	w("cntlid", strconv.Itoa(c.Cntlid))
	w("hostnqn", h.NQN)
	w("hostid", h.ID)
	w("ctrl_loss_tmo", onOff(c.sysfsCtrlLossTmo()))
	w("reconnect_delay", onOff(c.Spec.Options.ReconnectDelay))
	w("fast_io_fail_tmo", onOff(c.Spec.Options.FastIOFailTmo))
	w("kato", strconv.Itoa(c.Spec.Options.KeepAliveTmo))
	w("model", pad(modelOf(c.Spec.NQN), 40))
	w("serial", pad(serialNumber, 20))
	w("firmware_rev", pad(firmwareRev, 8))
	w("cntrltype", "io")
	w("dctype", "none")
	w("dev", fmt.Sprintf("%d:%d", majorCtrl, c.Instance))
	w("dhchap_secret", "none")
	w("dhchap_ctrl_secret", "none")
	w("numa_node", "-1")
	w("passthru_err_log_enabled", "off")
	w("queue_count", "4")
	w("sqsize", "127")
	w("tls_key", "")
	w("uevent", fmt.Sprintf("MAJOR=%d\nMINOR=%d\nDEVNAME=%s\nNVME_TRTYPE=%s\nNVME_TRADDR=%s\nNVME_TRSVCID=%s\nNVME_HOST_TRADDR=%s\nNVME_HOST_IFACE=%s",
		majorCtrl, c.Instance, name, c.Spec.Transport, c.Spec.Traddr, c.Spec.Trsvcid, noneIfEmpty(c.Spec.HostTraddr), noneIfEmpty(c.Spec.HostIface)))
}

// legAttrs writes a path leg's own attribute files (the namespace's are
// nsAttrNodes').
func legAttrs(l *leg, w func(f, v string)) {
	w("ana_state", string(l.ana))
	w("ana_grpid", strconv.Itoa(l.grp))
	w("hidden", "1")
	w("uevent", "DEVTYPE=disk")
}

// nsAttrKey is what a namespace's attribute files show (writeNSAttrs).
type nsAttrKey struct {
	nqn                  string
	nsid, ident, diskseq int
	size                 int64
}

// nsAttrCacheMax bounds a host's cache of namespace attribute files (one
// entry per namespace and disk sequence number seen; emptied when full).
const nsAttrCacheMax = 4096

// nsAttrNodes are the attribute files (and the queue/ directory) of
// writeNSAttrs for one namespace, sorted by name, built once per host and
// shared by every tree that shows that namespace — the legs of its paths
// and its head, in this render and the next ones: a tree's nodes are never
// modified once built, so sharing them changes no byte a reader sees.
func (h *Host) nsAttrNodes(nqn string, nsid, ident int, size int64, diskseq int) []*tnode {
	k := nsAttrKey{nqn: nqn, nsid: nsid, ident: ident, diskseq: diskseq, size: size}
	if ns, ok := h.nsAttrs[k]; ok {
		return ns
	}
	if h.nsAttrs == nil || len(h.nsAttrs) >= nsAttrCacheMax {
		h.nsAttrs = map[nsAttrKey][]*tnode{}
	}
	sb := newTreeBuilder()
	writeNSAttrs(sb.attrs("ns"), nqn, nsid, ident, size, diskseq)
	ns := sb.build().dirs["ns"].children
	h.nsAttrs[k] = ns
	return ns
}

// writeNSAttrs writes the attributes a namespace block device (head or
// path leg) shares.
func writeNSAttrs(w func(f, v string), nqn string, nsid, ident int, size int64, diskseq int) {
	uuid := nsUUID(nqn, ident)
	w("nsid", strconv.Itoa(nsid))
	w("size", strconv.FormatInt(size/512, 10))
	w("nuse", strconv.FormatInt(size/logicalBlockSize, 10))
	w("queue/logical_block_size", strconv.Itoa(logicalBlockSize))
	w("queue/physical_block_size", strconv.Itoa(logicalBlockSize))
	w("uuid", uuid)
	w("wwid", "uuid."+uuid)
	w("nguid", uuid)
	w("csi", "0")
	w("ro", "0")
	w("removable", "0")
	w("capability", "0")
	w("ext_range", "256")
	w("range", "0")
	w("metadata_bytes", "0")
	w("alignment_offset", "0")
	w("discard_alignment", "0")
	w("diskseq", strconv.Itoa(diskseq))
	w("events", "")
	w("events_async", "")
	w("events_poll_msecs", "-1")
	w("passthru_err_log_enabled", "off")
	w("inflight", "       0        0")
	w("stat", "       0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0")
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// sizeOf is the size in bytes of the namespaces of subsystem nqn.
func (h *Host) sizeOf(nqn string) int64 {
	if v, ok := h.w.byNQN[nqn]; ok {
		return v.SizeBytes
	}
	return 0
}

package nvmeof

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Directories of the sysfs tree this package reads, relative to the sys root.
const (
	classNvme          = "class/nvme"
	classNvmeSubsystem = "class/nvme-subsystem"
)

// ReadSysfs reads every NVMe controller and subsystem of the sysfs tree fsys,
// whose root is the "sys" directory (os.DirFS("/sys"), LoadCapture, or a tree
// rendered by the simulator), following the reading rules of docs/sources.md §1.2:
//
//   - Subsystems come from class/nvme-subsystem/nvme-subsysS (subsysnqn; the
//     controller entries nvmeN it lists; its multipath heads nvmeSnH, whose
//     NSID is read from the head's nsid file).
//   - Controllers come from class/nvme/nvmeN (state, transport, address,
//     subsysnqn, cntlid, hostnqn, hostid, ctrl_loss_tmo, reconnect_delay,
//     fast_io_fail_tmo; "off" reads as -1). Legs are read only under the
//     controller directory (nvmeScCnH: nsid, ana_state, ana_grpid); the NSID
//     comes from the leg's nsid file, never from its name.
//   - Entries under class/ are symlinks on a real /sys; they are followed.
//   - A controller, leg or head whose directory vanishes while it is being
//     read went away (kernel teardown): it is left out, not an error.
//   - The native multipath mode comes from module/nvme_core/parameters/
//     multipath ("Y" or "N"); without that file, a namespace disk under a
//     controller means multipath is off (see MultipathMode).
//   - Secret attributes (SecretAttrs: dhchap_secret, dhchap_ctrl_secret,
//     tls_key) are never read.
//
// A controller is put in the subsystem that lists it (when their NQNs agree);
// failing that, in the
// one its legs' names point to, or the only one with its NQN; failing all,
// in a subsystem with Instance -1 made for its NQN. Subsystems are sorted by
// instance, controllers by instance, legs and namespaces by NSID. A tree
// without class/nvme and class/nvme-subsystem is a host without NVMe: an empty
// HostState, no error.
//
// Errors (wrapped with %w where an fs error is the cause) name the path, and
// the capture line when fsys came from LoadCapture: a required attribute
// missing from a directory that still exists (subsysnqn; state, transport,
// address, subsysnqn of a controller; nsid of a leg or head), a number that
// does not parse, a malformed address, a state or ana_state that is not one
// of the kernel's (wrapping ErrUnknownState, listing the known ones), a
// multipath parameter other than Y or N, or an I/O error other than "gone".
func ReadSysfs(fsys fs.FS) (HostState, error) {
	r := &sysReader{fsys: fsys}
	return r.read()
}

// ReadHost is ReadSysfs keeping only the controllers whose hostnqn is
// hostNQN, and dropping the subsystems left with no controller. Several
// Kubernetes nodes can share one kernel (kind), so /sys then shows every
// node's controllers; a host is identified by its host NQN. hostNQN "" keeps
// everything (ReadSysfs). Errors as ReadSysfs.
func ReadHost(fsys fs.FS, hostNQN string) (HostState, error) {
	h, err := ReadSysfs(fsys)
	if err != nil || hostNQN == "" {
		return h, err
	}
	return FilterHost(h, hostNQN), nil
}

// FilterHost returns the part of h that belongs to host hostNQN: its
// controllers only, and only the subsystems where it has at least one. The
// non-multipath namespaces of dropped controllers are dropped with them.
func FilterHost(h HostState, hostNQN string) HostState {
	out := HostState{Multipath: h.Multipath}
	for _, s := range h.Subsystems {
		kept := map[string]bool{}
		var ctrls []Controller
		for _, c := range s.Controllers {
			if c.HostNQN == hostNQN {
				ctrls = append(ctrls, c)
				kept[c.Name] = true
			}
		}
		if len(ctrls) == 0 {
			continue
		}
		var nss []Namespace
		for _, n := range s.Namespaces {
			if n.Controller == "" || kept[n.Controller] {
				nss = append(nss, n)
			}
		}
		s.Controllers, s.Namespaces = ctrls, nss
		out.Subsystems = append(out.Subsystems, s)
	}
	return out
}

// errGone marks an object that vanished while being read.
var errGone = errors.New("gone")

// vanished reports whether err means the file or directory is no longer
// there: ENOENT, or ENODEV from a kernfs node being removed.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

// originFS is implemented by the trees LoadCapture builds.
type originFS interface{ Origin(name string) string }

type sysReader struct{ fsys fs.FS }

// where names p for an error message, with its capture line when known.
func (r *sysReader) where(p string) string {
	if o, ok := r.fsys.(originFS); ok {
		if s := o.Origin(p); s != "" && s != p {
			return p + " (" + s + ")"
		}
	}
	return p
}

func (r *sysReader) errorf(p, format string, a ...any) error {
	return fmt.Errorf("nvmeof: %s: %s", r.where(p), fmt.Sprintf(format, a...))
}

// attr reads an attribute, trimmed of surrounding white space. ok is false
// when the file does not exist.
func (r *sysReader) attr(p string) (value string, ok bool, err error) {
	b, err := fs.ReadFile(r.fsys, p)
	if err != nil {
		if vanished(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("nvmeof: %s: %w", r.where(p), err)
	}
	return strings.TrimSpace(string(b)), true, nil
}

// required reads an attribute that must exist while its directory dir does;
// errGone when dir itself is gone.
func (r *sysReader) required(dir, file string) (string, error) {
	p := sub(dir, file)
	v, ok, err := r.attr(p)
	if err != nil || ok {
		return v, err
	}
	if _, err := fs.Stat(r.fsys, dir); vanished(err) {
		return "", errGone
	}
	return "", r.errorf(p, "missing: a required attribute of %s", r.where(dir))
}

// optionalInt reads an integer attribute; def when absent. allowOff maps the
// kernel's "off" to -1.
func (r *sysReader) optionalInt(p string, def int, allowOff bool) (int, error) {
	v, ok, err := r.attr(p)
	if err != nil || !ok {
		return def, err
	}
	if allowOff && v == "off" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, r.errorf(p, "not an integer: %q", clip(v))
	}
	return n, nil
}

// dirEntries lists dir; errGone when it does not exist.
func (r *sysReader) dirEntries(dir string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		if vanished(err) {
			return nil, errGone
		}
		return nil, fmt.Errorf("nvmeof: %s: %w", r.where(dir), err)
	}
	return es, nil
}

// isDir reports whether entry e of dir is a directory, following a symlink.
func (r *sysReader) isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := fs.Stat(r.fsys, sub(dir, e.Name()))
	return err == nil && fi.IsDir()
}

// scanNum reads a decimal number at the start of s; ok is false without one.
func scanNum(s string) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 9 {
		return 0, s, false
	}
	n, _ = strconv.Atoi(s[:i])
	return n, s[i:], true
}

// parseCtrlName parses "nvmeN".
func parseCtrlName(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "nvme")
	if !ok {
		return 0, false
	}
	n, rest, ok := scanNum(rest)
	return n, ok && rest == ""
}

// parseHeadName parses "nvmeSnH" (a multipath head, or a namespace disk when
// multipath is off).
func parseHeadName(s string) (subsys, head int, ok bool) {
	rest, ok := strings.CutPrefix(s, "nvme")
	if !ok {
		return 0, 0, false
	}
	if subsys, rest, ok = scanNum(rest); !ok {
		return 0, 0, false
	}
	if rest, ok = strings.CutPrefix(rest, "n"); !ok {
		return 0, 0, false
	}
	head, rest, ok = scanNum(rest)
	return subsys, head, ok && rest == ""
}

// parseLegName parses "nvmeScCnH" (a path leg under a controller).
func parseLegName(s string) (subsys, ctrl, head int, ok bool) {
	rest, ok := strings.CutPrefix(s, "nvme")
	if !ok {
		return 0, 0, 0, false
	}
	if subsys, rest, ok = scanNum(rest); !ok {
		return 0, 0, 0, false
	}
	if rest, ok = strings.CutPrefix(rest, "c"); !ok {
		return 0, 0, 0, false
	}
	if ctrl, rest, ok = scanNum(rest); !ok {
		return 0, 0, 0, false
	}
	if rest, ok = strings.CutPrefix(rest, "n"); !ok {
		return 0, 0, 0, false
	}
	head, rest, ok = scanNum(rest)
	return subsys, ctrl, head, ok && rest == ""
}

// rawSubsystem is a subsystem directory as read, before controllers are
// attached.
type rawSubsystem struct {
	Subsystem
	members map[string]bool
}

func (r *sysReader) read() (HostState, error) {
	subs, err := r.readSubsystems()
	if err != nil {
		return HostState{}, err
	}
	ctrls, err := r.readControllers()
	if err != nil {
		return HostState{}, err
	}

	byInst := map[int]int{} // subsystem instance -> index in subs
	for i, s := range subs {
		byInst[s.Instance] = i
	}
	synthetic := map[string]int{} // NQN -> index of a made-up subsystem
	for _, cr := range ctrls {
		idx := -1
		for i, s := range subs {
			// Membership counts only with a matching NQN: a controller
			// instance reused between reading the subsystem directory
			// and reading the controller belongs elsewhere.
			if s.members[cr.c.Name] && s.NQN == cr.c.NQN {
				idx = i
				break
			}
		}
		if idx < 0 && cr.legSubsys >= 0 {
			if i, ok := byInst[cr.legSubsys]; ok && subs[i].NQN == cr.c.NQN {
				idx = i
			}
		}
		if idx < 0 {
			n := 0
			for i, s := range subs {
				if s.NQN == cr.c.NQN && s.Instance >= 0 {
					idx, n = i, n+1
				}
			}
			if n != 1 {
				idx = -1
			}
		}
		if idx < 0 {
			i, ok := synthetic[cr.c.NQN]
			if !ok {
				i = len(subs)
				subs = append(subs, rawSubsystem{Subsystem: Subsystem{Instance: -1, NQN: cr.c.NQN}})
				synthetic[cr.c.NQN] = i
			}
			idx = i
		}
		s := &subs[idx].Subsystem
		s.Controllers = append(s.Controllers, cr.c)
		for _, ns := range cr.namespaces {
			dup := false
			for _, have := range s.Namespaces {
				if have.NSID == ns.NSID {
					dup = true
					break
				}
			}
			if !dup {
				s.Namespaces = append(s.Namespaces, ns)
			}
		}
	}

	var h HostState
	if h.Multipath, err = r.multipath(ctrls); err != nil {
		return HostState{}, err
	}
	for _, s := range subs {
		sub := s.Subsystem
		sort.SliceStable(sub.Namespaces, func(i, j int) bool {
			a, b := sub.Namespaces[i], sub.Namespaces[j]
			if a.NSID != b.NSID {
				return a.NSID < b.NSID
			}
			return a.Head < b.Head
		})
		h.Subsystems = append(h.Subsystems, sub)
	}
	sort.SliceStable(h.Subsystems, func(i, j int) bool {
		a, b := h.Subsystems[i], h.Subsystems[j]
		if a.Instance != b.Instance {
			return a.Instance < b.Instance
		}
		return a.NQN < b.NQN
	})
	return h, nil
}

// multipath reads the nvme_core multipath parameter; without it, a
// controller's own namespace disk says multipath is off.
func (r *sysReader) multipath(ctrls []readCtrl) (MultipathMode, error) {
	v, ok, err := r.attr(MultipathParam)
	if err != nil {
		return MultipathUnknown, err
	}
	if ok {
		switch v {
		case "Y", "y", "1":
			return MultipathOn, nil
		case "N", "n", "0":
			return MultipathOff, nil
		}
		return MultipathUnknown, r.errorf(MultipathParam, "not a boolean module parameter: %q (want Y or N)", clip(v))
	}
	for _, c := range ctrls {
		if len(c.namespaces) > 0 {
			return MultipathOff, nil
		}
	}
	return MultipathUnknown, nil
}

func (r *sysReader) readSubsystems() ([]rawSubsystem, error) {
	es, err := r.dirEntries(classNvmeSubsystem)
	if errors.Is(err, errGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []rawSubsystem
	for _, e := range es {
		inst, ok := parseSubsysName(e.Name())
		if !ok || !r.isDir(classNvmeSubsystem, e) {
			continue
		}
		s, err := r.readSubsystem(sub(classNvmeSubsystem, e.Name()), inst)
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// parseSubsysName parses "nvme-subsysS".
func parseSubsysName(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "nvme-subsys")
	if !ok {
		return 0, false
	}
	n, rest, ok := scanNum(rest)
	return n, ok && rest == ""
}

func (r *sysReader) readSubsystem(dir string, inst int) (rawSubsystem, error) {
	s := rawSubsystem{Subsystem: Subsystem{Instance: inst}, members: map[string]bool{}}
	nqn, err := r.required(dir, "subsysnqn")
	if err != nil {
		return s, err
	}
	s.NQN = nqn
	es, err := r.dirEntries(dir)
	if err != nil {
		return s, err
	}
	for _, e := range es {
		name := e.Name()
		if _, ok := parseCtrlName(name); ok {
			s.members[name] = true
			continue
		}
		if _, _, ok := parseHeadName(name); !ok || !r.isDir(dir, e) {
			continue
		}
		ns, err := r.readNamespace(sub(dir, name), "")
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return s, err
		}
		s.Namespaces = append(s.Namespaces, ns)
	}
	return s, nil
}

func (r *sysReader) readNamespace(dir, ctrl string) (Namespace, error) {
	v, err := r.required(dir, "nsid")
	if err != nil {
		return Namespace{}, err
	}
	nsid, err := strconv.Atoi(v)
	if err != nil {
		return Namespace{}, r.errorf(sub(dir, "nsid"), "not an integer: %q", clip(v))
	}
	return Namespace{Head: path.Base(dir), NSID: nsid, Controller: ctrl}, nil
}

// readCtrl is a controller as read, with what places it in a subsystem.
type readCtrl struct {
	c          Controller
	legSubsys  int         // S of its legs' names, -1 without legs
	namespaces []Namespace // non-multipath namespace disks under it
}

func (r *sysReader) readControllers() ([]readCtrl, error) {
	es, err := r.dirEntries(classNvme)
	if errors.Is(err, errGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []readCtrl
	for _, e := range es {
		inst, ok := parseCtrlName(e.Name())
		if !ok || !r.isDir(classNvme, e) {
			continue
		}
		c, err := r.readController(sub(classNvme, e.Name()), e.Name(), inst)
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].c.Instance < out[j].c.Instance })
	return out, nil
}

func (r *sysReader) readController(dir, name string, inst int) (readCtrl, error) {
	rc := readCtrl{c: Controller{Name: name, Instance: inst}, legSubsys: -1}
	c := &rc.c
	state, err := r.required(dir, "state")
	if err != nil {
		return rc, err
	}
	if c.State, err = ParseControllerState(state); err != nil {
		return rc, fmt.Errorf("nvmeof: %s: %w", r.where(sub(dir, "state")), err)
	}
	if c.Transport, err = r.required(dir, "transport"); err != nil {
		return rc, err
	}
	if c.NQN, err = r.required(dir, "subsysnqn"); err != nil {
		return rc, err
	}
	addr, err := r.required(dir, "address")
	if err != nil {
		return rc, err
	}
	if c.Transport == "pcie" {
		// A PCI function ("0000:01:00.0"), not a fabrics address
		// (kernel drivers/nvme/host/pci.c nvme_pci_get_address).
		c.Address = Address{Traddr: addr}
	} else if c.Address, err = ParseAddress(addr); err != nil {
		return rc, r.errorf(sub(dir, "address"), "%v", err)
	} else if p := c.Address.Trsvcid; (c.Transport == "tcp" || c.Transport == "rdma") && p != "" && !isPort(p) {
		return rc, r.errorf(sub(dir, "address"), "trsvcid %q: a port is a number 0-65535 (transport %s)", p, c.Transport)
	}
	for _, f := range [...]struct {
		file     string
		dst      *int
		allowOff bool
	}{
		{"cntlid", &c.Cntlid, false},
		{"ctrl_loss_tmo", &c.CtrlLossTmo, true},
		{"reconnect_delay", &c.ReconnectDelay, true},
		{"fast_io_fail_tmo", &c.FastIOFailTmo, true},
	} {
		if *f.dst, err = r.optionalInt(sub(dir, f.file), 0, f.allowOff); err != nil {
			return rc, err
		}
	}
	for _, f := range [...]struct {
		file string
		dst  *string
	}{{"hostnqn", &c.HostNQN}, {"hostid", &c.HostID}} {
		if *f.dst, _, err = r.attr(sub(dir, f.file)); err != nil {
			return rc, err
		}
	}

	es, err := r.dirEntries(dir)
	if err != nil {
		return rc, err
	}
	for _, e := range es {
		en := e.Name()
		if s, _, _, ok := parseLegName(en); ok && r.isDir(dir, e) {
			l, err := r.readLeg(sub(dir, en))
			if errors.Is(err, errGone) {
				continue
			}
			if err != nil {
				return rc, err
			}
			c.Legs = append(c.Legs, l)
			if rc.legSubsys < 0 {
				rc.legSubsys = s
			}
			continue
		}
		if _, _, ok := parseHeadName(en); ok && r.isDir(dir, e) {
			ns, err := r.readNamespace(sub(dir, en), name)
			if errors.Is(err, errGone) {
				continue
			}
			if err != nil {
				return rc, err
			}
			rc.namespaces = append(rc.namespaces, ns)
		}
	}
	sort.SliceStable(c.Legs, func(i, j int) bool {
		if c.Legs[i].NSID != c.Legs[j].NSID {
			return c.Legs[i].NSID < c.Legs[j].NSID
		}
		return c.Legs[i].Name < c.Legs[j].Name
	})
	// The whole controller may have gone while its legs were read.
	if _, err := fs.Stat(r.fsys, dir); vanished(err) {
		return rc, errGone
	}
	return rc, nil
}

func (r *sysReader) readLeg(dir string) (Leg, error) {
	l := Leg{Name: path.Base(dir), ANA: ANAOptimized}
	v, err := r.required(dir, "nsid")
	if err != nil {
		return l, err
	}
	if l.NSID, err = strconv.Atoi(v); err != nil {
		return l, r.errorf(sub(dir, "nsid"), "not an integer: %q", clip(v))
	}
	a, ok, err := r.attr(sub(dir, "ana_state"))
	if err != nil {
		return l, err
	}
	if ok {
		if l.ANA, err = ParseANA(a); err != nil {
			return l, fmt.Errorf("nvmeof: %s: %w", r.where(sub(dir, "ana_state")), err)
		}
	}
	if l.ANAGroup, err = r.optionalInt(sub(dir, "ana_grpid"), 0, false); err != nil {
		return l, err
	}
	return l, nil
}

// sub is the path of entry name in directory dir. Every caller passes a
// clean dir and a name already parsed as an NVMe entry or attribute
// ("nvme3", "state"), so this is path.Join without its Clean.
func sub(dir, name string) string { return dir + "/" + name }

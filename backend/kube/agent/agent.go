package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fiomig/fiomig/nvmeof"
)

// Port is the agent's container port (named "http" in deploy/agent/).
const Port = 9560

// Headers of a /v1/sample answer.
const (
	// HeaderHostTime is the host clock, unix nanoseconds, when the read of
	// sysfs started.
	HeaderHostTime = "Fiomig-Host-Time"
	// HeaderHostNQN is the host's own host NQN (Identity.HostNQN).
	HeaderHostNQN = "Fiomig-Host-Nqn"
	// HeaderHostNQNs lists, comma-separated, every hostnqn whose
	// controllers the sample keeps (Identity.HostNQNs).
	HeaderHostNQNs = "Fiomig-Host-Nqns"
	// HeaderIdentity says where the agent learned them (Identity.Source).
	HeaderIdentity = "Fiomig-Host-Identity"
	// HeaderNode is the Kubernetes node name of the agent.
	HeaderNode = "Fiomig-Node"
)

// QueryNodeUID is the query parameter of /v1/host and /v1/sample by which
// the harness passes the Node's metadata.uid (the agent has no API access
// and the downward API does not offer it).
const QueryNodeUID = "node_uid"

// Config is one host's agent.
type Config struct {
	// Node is the Kubernetes node name (the downward API's spec.nodeName).
	Node string
	// HostNQN, when set, is the only hostnqn whose controllers are served
	// (Identity source "flag"): a host whose NVMe-oF identity is configured
	// by hand. Empty: the identity is learned (Identify).
	HostNQN string
	// NodeUID is the Node's metadata.uid when known at start; a request's
	// node_uid parameter overrides it.
	NodeUID string
	// Sys is the sysfs root (the "sys" directory: os.DirFS("/host/sys")).
	Sys fs.FS
	// SysFunc, when set, is called for the tree on every request instead of
	// using Sys (a simulator whose tree changes).
	SysFunc func() fs.FS
	// Now is the host clock; nil means time.Now.
	Now func() time.Time
}

// HostInfo is the JSON answer of GET /v1/host.
type HostInfo struct {
	Node         string   `json:"node"`
	HostNQN      string   `json:"hostnqn"`
	HostNQNs     []string `json:"hostnqns"`
	Source       string   `json:"source"`
	TimeUnixNano int64    `json:"time_unix_nano"`
}

// Where an Identity comes from.
const (
	// SourceFlag: the agent's --hostnqn.
	SourceFlag = "flag"
	// SourceNodeUID: simplyblock's CSI host NQN of the Node UID the
	// harness passed (CSIHostNQN).
	SourceNodeUID = "node-uid"
	// SourceSysfs: the hostnqn attributes of the host's controllers of
	// simplyblock subsystems.
	SourceSysfs = "sysfs"
)

// SubsystemNQNPrefix starts the NQN of every simplyblock volume's
// subsystem: the cluster NQN "nqn.2023-02.io.simplyblock" (sbcli
// simplyblock_core/constants.py CLUSTER_NQN) + ":<cluster>:lvol:<volume>"
// (sbcli lvol_controller.py, lvol.nqn).
const SubsystemNQNPrefix = "nqn.2023-02.io.simplyblock:"

// CSIHostNQNPrefix starts the host NQN simplyblock's CSI node plugin
// connects with: "nqn.2014-08.io.simplyblock:uuid:<Node metadata.uid>"
// (simplyblock-operator csi-driver/pkg/spdk/nodeserver.go NodeStageVolume
// and pkg/util/initiator.go NodeHostNQN; which NQN the kernel's
// controllers then carry is an [inference], docs/kube.md says how to check).
const CSIHostNQNPrefix = "nqn.2014-08.io.simplyblock:uuid:"

// CSIHostNQN is the CSI's host NQN of the Node with metadata.uid uid.
func CSIHostNQN(uid string) string { return CSIHostNQNPrefix + uid }

// Identity is which controllers belong to a host: those whose hostnqn
// attribute is in HostNQNs.
type Identity struct {
	// Source is SourceFlag, SourceNodeUID or SourceSysfs.
	Source string
	// HostNQN is the host's own NQN: the flag's, the CSI's of its Node UID,
	// or (sysfs) the only CSI-form NQN seen, else the first seen; "" when
	// nothing identifies it yet.
	HostNQN string
	// HostNQNs is every hostnqn kept, sorted.
	HostNQNs []string
}

// Identify decides, from the host's state hs, which controllers are the
// host's. A flagNQN wins. With the Node UID: the CSI's NQN of that UID,
// plus every other hostnqn on simplyblock subsystems that is not of the
// CSI's form — identities that connect from this host without being the
// CSI, such as the operator's validation Jobs (which connect with the
// rebalancer image's own NQN [inference]) — while the CSI NQN of another
// Node UID is another node's on a shared kernel and is left out. Without
// it: every hostnqn seen on a simplyblock subsystem's controllers (on a
// kernel shared by several nodes that is all of them; pass the UID there).
func Identify(hs nvmeof.HostState, flagNQN, nodeUID string) Identity {
	if flagNQN != "" {
		return Identity{Source: SourceFlag, HostNQN: flagNQN, HostNQNs: []string{flagNQN}}
	}
	seen := map[string]bool{}
	for _, s := range hs.Subsystems {
		if !strings.HasPrefix(s.NQN, SubsystemNQNPrefix) {
			continue
		}
		for _, c := range s.Controllers {
			if c.HostNQN != "" {
				seen[c.HostNQN] = true
			}
		}
	}
	if nodeUID != "" {
		own := CSIHostNQN(nodeUID)
		kept := map[string]bool{own: true}
		for n := range seen {
			if !strings.HasPrefix(n, CSIHostNQNPrefix) {
				kept[n] = true
			}
		}
		return Identity{Source: SourceNodeUID, HostNQN: own, HostNQNs: slices.Sorted(maps.Keys(kept))}
	}
	id := Identity{Source: SourceSysfs, HostNQNs: slices.Sorted(maps.Keys(seen))}
	var csi []string
	for _, n := range id.HostNQNs {
		if strings.HasPrefix(n, CSIHostNQNPrefix) {
			csi = append(csi, n)
		}
	}
	switch {
	case len(csi) == 1:
		id.HostNQN = csi[0]
	case len(id.HostNQNs) > 0:
		id.HostNQN = id.HostNQNs[0]
	}
	return id
}

// keep is the part of h whose controllers' hostnqn is in nqns (all of h
// for an empty list): nvmeof.FilterHost for a set of hostnqns.
func keep(h nvmeof.HostState, nqns []string) nvmeof.HostState {
	if len(nqns) == 0 {
		return h
	}
	out := nvmeof.HostState{Multipath: h.Multipath}
	for _, s := range h.Subsystems {
		kept := map[string]bool{}
		var ctrls []nvmeof.Controller
		for _, c := range s.Controllers {
			if slices.Contains(nqns, c.HostNQN) {
				ctrls = append(ctrls, c)
				kept[c.Name] = true
			}
		}
		if len(ctrls) == 0 {
			continue
		}
		var nss []nvmeof.Namespace
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

// Handler serves cfg's host: GET /healthz, /v1/host and /v1/sample (see the
// package doc); both take the Node UID as ?node_uid=. A sysfs tree that
// cannot be parsed answers 500 with the parser's error (which names the
// file); any other method answers 405.
func Handler(cfg Config) http.Handler {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	sys := func() fs.FS {
		if cfg.SysFunc != nil {
			return cfg.SysFunc()
		}
		return cfg.Sys
	}
	uid := func(r *http.Request) string {
		if u := r.URL.Query().Get(QueryNodeUID); u != "" {
			return u
		}
		return cfg.NodeUID
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /v1/host", func(w http.ResponseWriter, r *http.Request) {
		t := now()
		tree := sys()
		if tree == nil {
			http.Error(w, "fiomig agent on "+cfg.Node+": no sysfs tree", http.StatusInternalServerError)
			return
		}
		hs, err := nvmeof.ReadSysfs(tree)
		if err != nil {
			http.Error(w, "fiomig agent on "+cfg.Node+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		id := Identify(hs, cfg.HostNQN, uid(r))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(HostInfo{Node: cfg.Node, HostNQN: id.HostNQN, HostNQNs: id.HostNQNs, Source: id.Source, TimeUnixNano: t.UnixNano()})
	})
	mux.HandleFunc("GET /v1/sample", func(w http.ResponseWriter, r *http.Request) {
		t := now()
		tree := sys()
		var buf bytes.Buffer
		var id Identity
		err := errors.New("no sysfs tree")
		if tree != nil {
			var hs nvmeof.HostState
			if hs, err = nvmeof.ReadSysfs(tree); err == nil {
				id = Identify(hs, cfg.HostNQN, uid(r))
				err = writeCapture(&buf, tree, keep(hs, id.HostNQNs))
			}
		}
		if err != nil {
			http.Error(w, "fiomig agent on "+cfg.Node+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set(HeaderHostTime, strconv.FormatInt(t.UnixNano(), 10))
		h.Set(HeaderHostNQN, id.HostNQN)
		h.Set(HeaderHostNQNs, strings.Join(id.HostNQNs, ","))
		h.Set(HeaderIdentity, id.Source)
		h.Set(HeaderNode, cfg.Node)
		w.Write(buf.Bytes())
	})
	return mux
}

// Controller attribute files copied into a capture; the first four are
// required (nvmeof.ReadSysfs needs them), the rest optional.
var (
	ctrlRequired = []string{"state", "transport", "subsysnqn", "address"}
	ctrlOptional = []string{"cntlid", "ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo", "hostnqn", "hostid"}
	legFiles     = []string{"nsid", "ana_state", "ana_grpid"}
)

const (
	classNvme          = "class/nvme"
	classNvmeSubsystem = "class/nvme-subsystem"
)

// WriteCapture writes the part of the sysfs tree sys that belongs to the
// hostnqns (none, or only "": every controller) in the capture format,
// sorted by path: each controller's identifying attributes, its path legs
// (nsid, ana_state, ana_grpid) and non-multipath namespace disks (nsid), and
// each subsystem with such a controller (subsysnqn, its multipath heads'
// nsid, and one subsysnqn line under each kept member controller, which
// makes it a member). Which controllers belong is decided by nvmeof's
// parser, the one the harness uses; the values are then copied raw. A
// controller that vanishes while it is copied is left out whole, as nvmeof
// treats a vanished controller. Errors are the parser's (they name the
// file) or a value holding a tab or newline, which the format cannot carry.
func WriteCapture(w io.Writer, sys fs.FS, hostNQNs ...string) error {
	if sys == nil {
		return errors.New("no sysfs tree")
	}
	hs, err := nvmeof.ReadSysfs(sys)
	if err != nil {
		return err
	}
	var nqns []string
	for _, n := range hostNQNs {
		if n != "" {
			nqns = append(nqns, n)
		}
	}
	return writeCapture(w, sys, keep(hs, nqns))
}

// writeCapture writes hs, the kept part of sys, in the capture format.
func writeCapture(w io.Writer, sys fs.FS, hs nvmeof.HostState) error {
	lines := map[string]string{}
	for _, s := range hs.Subsystems {
		var kept []string
		for _, c := range s.Controllers {
			cl, ok, err := controllerLines(sys, c)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			for p, v := range cl {
				lines[p] = v
			}
			kept = append(kept, c.Name)
		}
		if len(kept) == 0 || s.Instance < 0 {
			// A subsystem directory nvmeof made up (controllers without
			// one) has no directory to copy; its controllers are enough.
			continue
		}
		dir := path.Join(classNvmeSubsystem, "nvme-subsys"+strconv.Itoa(s.Instance))
		v, ok, err := attr(sys, path.Join(dir, "subsysnqn"))
		if err != nil {
			return err
		}
		if !ok {
			continue // the subsystem went away; its controllers still say which it was
		}
		lines[path.Join(dir, "subsysnqn")] = v
		for _, name := range kept {
			lines[path.Join(dir, name, "subsysnqn")] = s.NQN
		}
		for _, ns := range s.Namespaces {
			if ns.Controller != "" {
				continue
			}
			p := path.Join(dir, ns.Head, "nsid")
			if v, ok, err := attr(sys, p); err != nil {
				return err
			} else if ok {
				lines[p] = v
			}
		}
	}
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(lines)) {
		b.WriteString("/sys/")
		b.WriteString(p)
		b.WriteByte('\t')
		b.WriteString(lines[p])
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// controllerLines copies controller c's files; ok is false when it
// vanished (a required file is gone).
func controllerLines(sys fs.FS, c nvmeof.Controller) (map[string]string, bool, error) {
	dir := path.Join(classNvme, c.Name)
	out := map[string]string{}
	for _, f := range ctrlRequired {
		v, ok, err := attr(sys, path.Join(dir, f))
		if err != nil || !ok {
			return nil, false, err
		}
		out[path.Join(dir, f)] = v
	}
	for _, f := range ctrlOptional {
		v, ok, err := attr(sys, path.Join(dir, f))
		if err != nil {
			return nil, false, err
		}
		if ok {
			out[path.Join(dir, f)] = v
		}
	}
	for _, l := range c.Legs {
		for _, f := range legFiles {
			p := path.Join(dir, l.Name, f)
			v, ok, err := attr(sys, p)
			if err != nil {
				return nil, false, err
			}
			if ok {
				out[p] = v
			} else if f == "nsid" {
				// The leg went away: leave it out (its other files too).
				for _, g := range legFiles {
					delete(out, path.Join(dir, l.Name, g))
				}
				break
			}
		}
	}
	return out, true, nil
}

// attr reads one attribute without its trailing newline; ok is false when
// the file does not exist (any more).
func attr(sys fs.FS, p string) (string, bool, error) {
	b, err := fs.ReadFile(sys, p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", p, err)
	}
	v := strings.TrimSuffix(string(b), "\n")
	if strings.ContainsAny(v, "\t\n") {
		return "", false, fmt.Errorf("%s: value %q holds a tab or newline, which the capture format cannot carry", p, v)
	}
	return v, true, nil
}

// Sample is one decoded /v1/sample answer.
type Sample struct {
	Node    string
	HostNQN string
	// HostNQNs are the hostnqns whose controllers it holds; Source says
	// how the agent learned them (Identity).
	HostNQNs []string
	Source   string
	// HostTime is the host clock when the agent started reading sysfs.
	HostTime time.Time
	// Sys is the served tree, ready for nvmeof.ReadHost.
	Sys fs.FS
}

// Decode reads a /v1/sample answer (its headers and body). name is used in
// errors (e.g. the agent pod). A missing or malformed Fiomig-Host-Time is an
// error: a sample without the host's time cannot be placed on the timeline.
func Decode(h http.Header, body io.Reader, name string) (Sample, error) {
	ns, err := strconv.ParseInt(h.Get(HeaderHostTime), 10, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: header %s %q: want unix nanoseconds", name, HeaderHostTime, h.Get(HeaderHostTime))
	}
	sys, err := nvmeof.LoadCapture(body, name)
	if err != nil {
		return Sample{}, err
	}
	var nqns []string
	if v := h.Get(HeaderHostNQNs); v != "" {
		nqns = strings.Split(v, ",")
	}
	return Sample{Node: h.Get(HeaderNode), HostNQN: h.Get(HeaderHostNQN), HostNQNs: nqns, Source: h.Get(HeaderIdentity),
		HostTime: time.Unix(0, ns), Sys: sys}, nil
}

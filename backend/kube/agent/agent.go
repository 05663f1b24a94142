package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// HeaderHostNQN is the hostnqn whose controllers the sample keeps.
	HeaderHostNQN = "Fiomig-Host-Nqn"
	// HeaderNode is the Kubernetes node name of the agent.
	HeaderNode = "Fiomig-Node"
)

// Config is one host's agent.
type Config struct {
	// Node is the Kubernetes node name (the downward API's spec.nodeName).
	Node string
	// HostNQN is the host's NVMe host NQN; only controllers whose hostnqn
	// equals it are served. Empty serves every controller (a host whose
	// hostnqn is unknown; the harness then refuses it, see kube.Cluster).
	HostNQN string
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
	Node         string `json:"node"`
	HostNQN      string `json:"hostnqn"`
	TimeUnixNano int64  `json:"time_unix_nano"`
}

// Handler serves cfg's host: GET /healthz, /v1/host and /v1/sample (see the
// package doc). A sysfs tree that cannot be parsed answers 500 with the
// parser's error (which names the file); any other method answers 405.
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
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /v1/host", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(HostInfo{Node: cfg.Node, HostNQN: cfg.HostNQN, TimeUnixNano: now().UnixNano()})
	})
	mux.HandleFunc("GET /v1/sample", func(w http.ResponseWriter, _ *http.Request) {
		t := now()
		var buf bytes.Buffer
		if err := WriteCapture(&buf, sys(), cfg.HostNQN); err != nil {
			http.Error(w, "fiomig agent on "+cfg.Node+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set(HeaderHostTime, strconv.FormatInt(t.UnixNano(), 10))
		h.Set(HeaderHostNQN, cfg.HostNQN)
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

// WriteCapture writes the part of the sysfs tree sys that belongs to host
// hostNQN ("" = every controller) in the capture format, sorted by path:
// each controller's identifying attributes, its path legs (nsid, ana_state,
// ana_grpid) and non-multipath namespace disks (nsid), and each subsystem
// with such a controller (subsysnqn, its multipath heads' nsid, and one
// subsysnqn line under each kept member controller, which makes it a
// member). Which controllers belong to the host is decided by
// nvmeof.ReadHost, the parser the harness uses; the values are then copied
// raw. A controller that vanishes while it is copied is left out whole, as
// nvmeof treats a vanished controller. Errors are the parser's (they name
// the file) or a value holding a tab or newline, which the format cannot
// carry.
func WriteCapture(w io.Writer, sys fs.FS, hostNQN string) error {
	if sys == nil {
		return errors.New("no sysfs tree")
	}
	hs, err := nvmeof.ReadHost(sys, hostNQN)
	if err != nil {
		return err
	}
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
	for _, p := range slices.Sorted(mapsKeys(lines)) {
		b.WriteString("/sys/")
		b.WriteString(p)
		b.WriteByte('\t')
		b.WriteString(lines[p])
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
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
	return Sample{Node: h.Get(HeaderNode), HostNQN: h.Get(HeaderHostNQN), HostTime: time.Unix(0, ns), Sys: sys}, nil
}

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

// proxyGet GETs path (which may carry a query) from port of pod in
// namespace ns through the API server's pod proxy (pods/proxy: GET
// /api/v1/namespaces/NS/pods/POD:PORT/proxy/PATH). It is how fiomig reaches
// its own pods (agents, helpers, fio log sidecars): it works through any
// kubeconfig allowed pods/proxy in the run's namespace, needs no NodePort,
// hostPort, exec or route to the nodes, and the API server's
// authentication and RBAC apply. It carries no credential of its own (the
// API server strips Authorization), so the control plane is reached
// otherwise (controlPlane). A non-2xx answer is an error holding the start
// of its body.
func (c *Cluster) proxyGet(ctx context.Context, ns, pod string, port int, path string) (http.Header, []byte, error) {
	p, query, _ := strings.Cut(path, "?")
	u := c.cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").
		Name(fmt.Sprintf("%s:%d", pod, port)).SubResource("proxy").Suffix(p).URL()
	u.RawQuery = query
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s from pod %s/%s:%d (pod proxy): %w", path, ns, pod, port, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s from pod %s/%s:%d (pod proxy): %w", path, ns, pod, port, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("GET %s from pod %s/%s:%d (pod proxy): %s: %s", path, ns, pod, port, resp.Status, clip(string(body)))
	}
	return resp.Header, body, nil
}

func (c *Cluster) proxyJSON(ctx context.Context, ns, pod string, port int, path string, v any) error {
	_, body, err := c.proxyGet(ctx, ns, pod, port, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s from pod %s/%s:%d: %w", path, ns, pod, port, err)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// host is a consumer host read through its agent.
type host struct {
	c              *Cluster
	name, nqn, pod string
	// uid is the Node's metadata.uid, passed to the agent (whose CSI
	// identity derives from it); source is where the agent learned the
	// host's NQN (agent.Identity).
	uid, source string
	// last is the host clock of the last sample (agent.Sample.HostTime);
	// lastSys its tree (MigrationStage reads it).
	last    time.Time
	lastSys fs.FS
}

func (h *host) Name() string { return h.name }

// HostNQN implements backend.Host: "", because the agent already served
// only this host's controllers — those of its own NQN and of the other
// identities connecting from it, such as the operator's validation Jobs
// (agent.Identify) — and every one of them must reach the collectors and
// the leak checks. The host's own NQN is in Topology.
func (h *host) HostNQN() string { return "" }

// agentPath is path with the Node UID the agent derives the CSI identity from.
func (h *host) agentPath(path string) string {
	return path + "?" + url.Values{agent.QueryNodeUID: {h.uid}}.Encode()
}

func (h *host) info(ctx context.Context) (agent.HostInfo, error) {
	var info agent.HostInfo
	err := h.c.proxyJSON(ctx, h.c.cfg.Namespace, h.pod, agent.Port, h.agentPath("/v1/host"), &info)
	return info, err
}

// Sysfs implements backend.Host: one GET /v1/sample from the host's agent
// (up to 3 tries 200 ms apart). When every try fails it returns a tree
// whose every read fails with the error, so the collector reports the
// host as unreadable instead of recording an empty host (which would read
// as every path gone).
func (h *host) Sysfs() fs.FS {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		var hdr http.Header
		var body []byte
		hdr, body, err = h.c.proxyGet(h.c.ctx, h.c.cfg.Namespace, h.pod, agent.Port, h.agentPath("/v1/sample"))
		if err != nil {
			continue
		}
		var s agent.Sample
		s, err = agent.Decode(hdr, bytes.NewReader(body), "agent "+h.pod+" on "+h.name)
		if err != nil {
			break
		}
		if s.HostNQN != h.nqn {
			err = fmt.Errorf("agent %s on %s serves hostnqn %q, want %q", h.pod, h.name, s.HostNQN, h.nqn)
			break
		}
		h.last, h.lastSys = s.HostTime, s.Sys
		return s.Sys
	}
	return failFS{err}
}

// LastHostTime is the host clock of the last sample read (zero before).
func (h *host) LastHostTime() time.Time { return h.last }

// failFS fails every operation with err.
type failFS struct{ err error }

func (f failFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: f.err}
}

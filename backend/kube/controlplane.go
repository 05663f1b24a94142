package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// ErrNoSecret is returned by New when Config.ClusterSecret is empty: every
// /api/v2/clusters/** route of the control plane needs the cluster's
// secret as a bearer token (sbcli simplyblock_web/api/v2/__init__.py
// include_router(cluster.api, dependencies=[Depends(verify_api_token)]),
// _auth.py verify_api_token), and the harness may not read Secrets itself.
var ErrNoSecret = errors.New("no control-plane credential: give the cluster secret with --cluster-secret-file FILE or $" + SecretEnv + " (docs/kube.md, \"First run on a lab cluster\")")

// ErrSecretRefused wraps a 401 or 403 answer of the control plane: the
// cluster secret given is not the cluster's (sbcli _auth.py
// verify_api_token raises 401 "Invalid token").
var ErrSecretRefused = errors.New("the control plane refused the cluster secret")

// SecretEnv is the environment variable fiomig run reads the cluster
// secret from when no --cluster-secret-file is given.
const SecretEnv = "FIOMIG_CLUSTER_SECRET"

// ClusterSecret picks the bearer token of cluster clusterID out of what the
// user gave: simplyblock's secret.json (the key secret.json of Secret
// simplyblock-csi-secret-v2: {"clusters":[{"cluster_id", "cluster_secret",
// ...}]}, simplyblock-operator csi-driver/pkg/util/initiator.go
// ClustersInfo) or the bare secret (surrounding white space dropped).
// Errors name what is missing, never the secret.
func ClusterSecret(raw []byte, clusterID string) (string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "", ErrNoSecret
	}
	if t[0] != '{' {
		if bytes.ContainsAny(t, " \t\r\n") {
			return "", errors.New("the cluster secret holds white space: give the bare secret or simplyblock's secret.json")
		}
		return string(t), nil
	}
	var doc struct {
		Clusters []struct {
			ID     string `json:"cluster_id"`
			Secret string `json:"cluster_secret"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal(t, &doc); err != nil {
		return "", fmt.Errorf("the cluster secret looks like JSON but is not simplyblock's secret.json: %v", jsonSyntax(err))
	}
	var ids []string
	for _, c := range doc.Clusters {
		if c.ID == clusterID && c.Secret != "" {
			return c.Secret, nil
		}
		ids = append(ids, c.ID)
	}
	return "", fmt.Errorf("secret.json holds no cluster_secret for cluster %s (it lists clusters %v)", clusterID, ids)
}

// jsonSyntax is a JSON error without the input it quotes.
func jsonSyntax(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return "wrong shape"
}

// controlPlane is simplyblock's control-plane REST API (sbcli
// simplyblock_web, port 5000 of a webappapi pod, label
// app=simplyblock-webappapi) reached through pods/portforward (client-go
// tools/portforward on 127.0.0.1), each request carrying the cluster secret
// as its bearer. Port-forwarding is the transport because it carries the
// credential end to end: the API server's pod proxy deletes the
// Authorization header of every request it authenticated (kubernetes
// staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go
// WithAuthentication), so no bearer reaches sbcli that way; pods/exec of
// sbctl in that pod would also work but is a far larger grant (any command
// in the pod that holds the cluster's secrets) and answers in CLI text.
// docs/kube.md argues the choice. The forward is opened on first use and
// reopened once when a request fails on it (the pod restarted).
type controlPlane struct {
	rest   *rest.Config
	cs     kubernetes.Interface
	ns     string
	secret string // the bearer; never printed, logged or recorded

	mu    sync.Mutex
	pod   string
	local string // 127.0.0.1:<port> of the open forward
	stop  chan struct{}
	http  *http.Client
}

// podName picks the first Running control-plane pod (sorted by name), as
// the seed harness picks the webappapi pod for sbctl.
func (cp *controlPlane) podName(ctx context.Context) (string, error) {
	pods, err := cp.cs.CoreV1().Pods(cp.ns).List(ctx, metaList(labelControlPlane))
	if err != nil {
		return "", fmt.Errorf("list control-plane pods (%s) in namespace %s: %w", labelControlPlane, cp.ns, err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no Running control-plane pod (%s) in namespace %s (--control-plane-namespace)", labelControlPlane, cp.ns)
	}
	sort.Strings(names)
	return names[0], nil
}

// open starts the port forward to the control plane's port (waiting up to
// 30 s for it to listen); mu is held.
func (cp *controlPlane) open(ctx context.Context) error {
	pod, err := cp.podName(ctx)
	if err != nil {
		return err
	}
	u := cp.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(cp.ns).Name(pod).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(cp.rest)
	if err != nil {
		return err
	}
	var dialer httpstream.Dialer = spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	// As kubectl port-forward: WebSockets first (what newer API servers
	// prefer), SPDY when the upgrade is refused.
	if ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cp.rest); err == nil {
		dialer = portforward.NewFallbackDialerForStreaming(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", controlPlanePort)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return err
	}
	failed := make(chan error, 1)
	go func() { failed <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return fmt.Errorf("port-forward to control-plane pod %s/%s:%d: %w", cp.ns, pod, controlPlanePort, err)
	case <-time.After(30 * time.Second):
		close(stop)
		return fmt.Errorf("port-forward to control-plane pod %s/%s:%d: not listening after 30 s", cp.ns, pod, controlPlanePort)
	case <-ctx.Done():
		close(stop)
		return ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stop)
		return fmt.Errorf("port-forward to control-plane pod %s/%s: local port: %v", cp.ns, pod, err)
	}
	cp.pod, cp.stop = pod, stop
	cp.local = fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
	if cp.http == nil {
		cp.http = &http.Client{Timeout: 15 * time.Second}
	}
	return nil
}

// close stops the forward (idempotent).
func (cp *controlPlane) close() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.closeLocked()
}

func (cp *controlPlane) closeLocked() {
	if cp.stop != nil {
		close(cp.stop)
		cp.stop, cp.local = nil, ""
	}
}

// getJSON GETs path (with query q) from the control plane with the bearer
// and decodes the JSON answer into v. A 401 or 403 wraps ErrSecretRefused;
// another non-2xx answer is an error with its status and the start of its
// body; a request that fails on the forward reopens it and tries once more.
func (cp *controlPlane) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var status int
	var body []byte
	var err error
	for try := 0; try < 2; try++ {
		if cp.local == "" {
			if err = cp.open(ctx); err != nil {
				return err
			}
		}
		status, body, err = cp.get(ctx, path, q)
		if err == nil {
			break
		}
		cp.closeLocked()
	}
	what := fmt.Sprintf("GET %s from control-plane pod %s/%s:%d (port-forward)", path, cp.ns, cp.pod, controlPlanePort)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w: %s: %d %s", ErrSecretRefused, what, status, clip(string(body)))
	case status/100 != 2:
		return fmt.Errorf("%s: %d %s", what, status, clip(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (cp *controlPlane) get(ctx context.Context, path string, q url.Values) (int, []byte, error) {
	u := url.URL{Scheme: "http", Host: cp.local, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cp.secret)
	resp, err := cp.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, body, err
}

// connectString is one entry of the control plane's connect strings for a
// volume (sbcli simplyblock_core/utils/nvme.py NvmeConnectEntry; its other
// keys are hyphenated and unused here).
type connectString struct {
	IP        string `json:"ip"`
	Port      int    `json:"port"`
	NQN       string `json:"nqn"`
	Transport string `json:"transport"`
}

// connectPath is the control plane's route for a volume's connect strings:
// GET /api/v2/clusters/{cluster}/storage-pools/{pool}/volumes/{volume}/connect
// (sbcli simplyblock_web/api/v2/cluster/storage_pool/volume/__init__.py
// connect; the CSI driver calls the same path, simplyblock-operator
// csi-driver/pkg/util/jsonrpc.go v2volumeConnect). The pool is the middle
// field of the PV's volume handle.
func connectPath(v *volume) string {
	return fmt.Sprintf("/api/v2/clusters/%s/storage-pools/%s/volumes/%s/connect", v.Cluster, v.Pool, v.UUID)
}

// fetchEndpoints reads the endpoints the control plane publishes for v,
// as canonical ip:port, sorted and without duplicates. It passes host_nqn =
// the consumer host's NQN, as the CSI does on every stage (simplyblock-
// operator csi-driver/pkg/spdk/nodeserver.go: VolumeInfo(lvol, hostNQN)):
// a volume with allowed hosts answers 404 without it (sbcli
// utils/nvme.py HostConnectAuth.resolve), and one without ignores it for
// the addresses. Entries for another NQN are ignored; an unparsable ip is
// an error naming it.
func (c *Cluster) fetchEndpoints(ctx context.Context, v *volume) ([]string, error) {
	q := url.Values{}
	if h := c.host(v.Host); h != nil && h.nqn != "" {
		q.Set("host_nqn", h.nqn)
	}
	var cs []connectString
	if err := c.cp.getJSON(ctx, connectPath(v), q, &cs); err != nil {
		return nil, fmt.Errorf("kube: endpoints of volume %s (%s): %w", v.Name, v.NQN, err)
	}
	out := []string{}
	for _, s := range cs {
		if s.NQN != "" && s.NQN != v.NQN {
			continue
		}
		ep, err := canonical(strings.Trim(s.IP, "[]"), s.Port)
		if err != nil {
			return nil, fmt.Errorf("kube: endpoints of volume %s: connect string ip %q: %w", v.Name, s.IP, err)
		}
		if !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	sort.Strings(out)
	return out, nil
}

// nic is one entry of a storage node's data NICs (sbcli
// simplyblock_web/api/v2/cluster/storage_node/__init__.py nics).
type nic struct {
	Address string `json:"Address"`
	NetType string `json:"Net type"`
	Status  string `json:"Status"`
}

// fetchDataIPs reads the data-NIC addresses of storage node n: the
// addresses hosts connect to (connect strings carry each node's data NIC
// ip4_address, sbcli lvol_controller.py _connect_entries_for_volume),
// which need not be the StorageNodeSet's mgmtIp.
func (c *Cluster) fetchDataIPs(ctx context.Context, n storageNode) ([]string, error) {
	var nics []nic
	path := fmt.Sprintf("/api/v2/clusters/%s/storage-nodes/%s/nics", c.clusterUUID, n.UUID)
	if err := c.cp.getJSON(ctx, path, nil, &nics); err != nil {
		return nil, fmt.Errorf("kube: data NICs of storage node %s (%s): %w", n.Name, n.UUID, err)
	}
	var ips []string
	for _, x := range nics {
		if x.Address != "" && !slices.Contains(ips, x.Address) {
			ips = append(ips, x.Address)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("kube: storage node %s (%s) lists no data NIC address", n.Name, n.UUID)
	}
	return ips, nil
}

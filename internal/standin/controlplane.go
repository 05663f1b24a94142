package standin

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/sim"
)

// The control plane's REST API as sbcli serves it (simplyblock_web, the
// webappapi pod's port 5000), reduced to the routes the harness reads, with
// the contract that matters to it:
//
//   - Every /api/v2/clusters/** route needs "Authorization: Bearer <the
//     cluster's secret>" and answers 401 {"detail":"Invalid token"}
//     otherwise (sbcli simplyblock_web/api/v2/__init__.py, _auth.py
//     verify_api_token; a missing header is refused too — FastAPI's
//     HTTPBearer answers 401 or 403 for it depending on its release, the
//     stand-in 401). The API server's pod proxy strips Authorization, so a
//     call through pods/proxy is refused here as on a cluster.
//   - Only the real paths exist; anything else is 404.
//
// It is part of the played simplyblock, not of the kubelet.

// connectEntry is one connect string (sbcli simplyblock_core/utils/nvme.py
// NvmeConnectEntry, hyphenated keys).
type connectEntry struct {
	Transport      string   `json:"transport"`
	IP             string   `json:"ip"`
	Port           int      `json:"port"`
	NQN            string   `json:"nqn"`
	ReconnectDelay int      `json:"reconnect-delay"`
	CtrlLossTmo    int      `json:"ctrl-loss-tmo"`
	FastIOFailTmo  int      `json:"fast-io-fail-tmo"`
	NrIOQueues     int      `json:"nr-io-queues"`
	KeepAliveTmo   int      `json:"keep-alive-tmo"`
	Connect        string   `json:"connect"`
	NSID           int      `json:"ns-id"`
	AllowedHosts   []string `json:"allowed-hosts"`
}

// nicEntry is one data NIC of a storage node (sbcli
// simplyblock_web/api/v2/cluster/storage_node/__init__.py nics).
type nicEntry struct {
	ID      string `json:"ID"`
	Device  string `json:"Device name"`
	Address string `json:"Address"`
	NetType string `json:"Net type"`
	Status  string `json:"Status"`
}

func detail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"detail": msg})
}

// authorized is verify_api_token for the one simulated cluster: the bearer
// must be its secret, and a route naming a cluster must name it.
func (s *StandIn) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.ClusterSecret)) != 1 {
		detail(w, http.StatusUnauthorized, "Invalid token")
		return false
	}
	if c := r.PathValue("cluster"); c != "" && c != sim.ClusterUUID {
		detail(w, http.StatusUnauthorized, "Invalid token")
		return false
	}
	return true
}

// webAPI serves GET /api/v2/clusters/{cluster}/storage-pools/{pool}/volumes/{volume}/connect[?host_nqn=]
// — the volume's connect strings: its lvstore's port on each data address
// of the nodes serving it now; a volume whose allowed hosts are set
// answers 404 unless host_nqn is one of them (sbcli lvol_controller.py
// connect_lvol, utils/nvme.py HostConnectAuth.resolve) — and GET
// /api/v2/clusters/{cluster}/storage-nodes/{node}/nics, a storage node's
// data NICs.
func (s *StandIn) webAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/clusters/{cluster}/storage-pools/{pool}/volumes/{volume}/connect", func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(w, r) {
			return
		}
		if r.PathValue("pool") != PoolUUID {
			detail(w, http.StatusNotFound, "Storage pool not found")
			return
		}
		s.mu.Lock()
		var vol *sim.Volume
		for _, v := range s.w.Volumes() {
			if VolumeUUID(v.NQN) == r.PathValue("volume") {
				vol = v
			}
		}
		var eps []string
		if vol != nil {
			eps = s.w.Endpoints(vol.NQN)
		}
		s.mu.Unlock()
		if vol == nil {
			detail(w, http.StatusNotFound, "Volume not found")
			return
		}
		allowed := s.allowedHosts(vol)
		hostNQN := r.URL.Query().Get("host_nqn")
		switch {
		case len(allowed) > 0 && hostNQN == "":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("Volume " + VolumeUUID(vol.NQN) + " has allowed hosts configured; --host-nqn is required"))
			return
		case len(allowed) > 0 && !slices.Contains(allowed, hostNQN):
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("Host NQN " + hostNQN + " not found in allowed hosts for volume " + VolumeUUID(vol.NQN)))
			return
		}
		out := []connectEntry{}
		for _, ep := range eps {
			ap, err := netip.ParseAddrPort(s.dataEndpoint(ep))
			if err != nil {
				continue
			}
			e := connectEntry{Transport: "tcp", IP: ap.Addr().String(), Port: int(ap.Port()), NQN: vol.NQN,
				ReconnectDelay: 2, CtrlLossTmo: 60, FastIOFailTmo: 8, NrIOQueues: 3, KeepAliveTmo: 4, NSID: vol.NSIDs[0], AllowedHosts: allowed}
			e.Connect = "sudo nvme connect --transport=tcp --traddr=" + e.IP + " --trsvcid=" + strconv.Itoa(e.Port) + " --nqn=" + vol.NQN
			if hostNQN != "" {
				e.Connect += " --hostnqn=" + hostNQN
			}
			out = append(out, e)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /api/v2/clusters/{cluster}/storage-nodes/{node}/nics", func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(w, r) {
			return
		}
		for _, n := range s.nodes {
			if n.uuid == r.PathValue("node") {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode([]nicEntry{{ID: n.uuid[:8] + "-data0", Device: "eth1", Address: n.dataIP, NetType: "tcp", Status: "online"}})
				return
			}
		}
		detail(w, http.StatusNotFound, "Storage node not found")
	})
	return mux
}

// allowedHosts are the host NQNs volume v admits: with Config.AllowedHosts
// its consumers' CSI NQNs (a DHCHAP pool's volumes), else none (any host).
func (s *StandIn) allowedHosts(v *sim.Volume) []string {
	if !s.cfg.AllowedHosts {
		return nil
	}
	var out []string
	for _, h := range v.Consumers {
		out = append(out, s.nodes[h].csiNQN())
	}
	return out
}

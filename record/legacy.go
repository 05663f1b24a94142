package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// UnmarshalJSON reads plan.json's params strictly (an unknown field is an
// error naming it). A plan written before params.model existed carries
// the world's shape at the top of params and its switches as strings in
// params.extra: both are read into Model here, once, so that nothing
// downstream parses a switch from a string. A params.extra value that
// does not parse is an error naming it. A seed_checks threshold plan.json
// lacks is its default (SeedThresholds); one it has is kept, 0 included.
func (p *Params) UnmarshalJSON(b []byte) error {
	type params Params // Params' fields without this method
	var x struct {
		params
		// The shape at the top of params, before params.model.
		Hosts              *int         `json:"hosts"`
		Volumes            *int         `json:"volumes"`
		ConsumersPerVolume *int         `json:"consumers_per_volume"`
		CutoverPauseS      *float64     `json:"cutover_pause_s"`
		Extra              *legacyExtra `json:"extra"`
	}
	x.Seed = DefaultSeedThresholds() // decoding keeps what plan.json lacks
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return err
	}
	*p = Params(x.params)
	m := &p.Model
	if m.Version > ModelVersion {
		return fmt.Errorf("params.model.version %d: this fiomig reads model versions up to %d (a plan.json of a later fiomig)", m.Version, ModelVersion)
	}
	for _, v := range []struct {
		from *int
		to   *int
	}{{x.Hosts, &m.Hosts}, {x.Volumes, &m.Volumes}, {x.ConsumersPerVolume, &m.ConsumersPerVolume}} {
		if v.from != nil {
			*v.to = *v.from
		}
	}
	if x.CutoverPauseS != nil {
		m.CutoverPauseS = *x.CutoverPauseS
	}
	if x.Extra != nil {
		return x.Extra.into(p)
	}
	return nil
}

// legacyExtra is params.extra as fiomig run and fiomig reproduce wrote it
// before params.model: every value a string.
type legacyExtra struct {
	GapS                string `json:"gap_s"`
	Faults              string `json:"faults"`
	ControlPlane        string `json:"control_plane"`
	NamespacesPerVolume string `json:"namespaces_per_volume"`
	NamespacedVolumes   string `json:"namespaced_volumes"`
	LvolMonitor         string `json:"lvol_monitor"`
	CSIRestore          string `json:"csi_restore"`
	ReleaseSources      string `json:"release_sources"`
	ListenerRace        string `json:"listener_race"`
	SwapReaddFail       string `json:"swap_readd_fail"`
	NSIDDivergence      string `json:"nsid_divergence"`
	Operator            string `json:"operator"`
	ReconnectReset      string `json:"reconnect_reset"`
	KernelDNR           string `json:"kernel_dnr"`
	TargetDNR           string `json:"target_dnr"`
	HostsAreNodes       string `json:"hosts_are_nodes"`
	Pods                string `json:"pods"`
	PodToleranceS       string `json:"pod_tolerance_s"`
	JobStartS           string `json:"job_start_s"`
	SyncS               string `json:"sync_s"`
	Incident            string `json:"incident"`
	FaultSchedule       string `json:"fault_schedule"`
	Workload            string `json:"workload"`
	FioRateIOPS         string `json:"fio_rate_iops"`
	RunID               string `json:"run_id"`
}

// into converts e into p's typed fields. An absent key leaves its field as
// it is (zero: the default, or what that older run did not have).
func (e legacyExtra) into(p *Params) error {
	m := &p.Model
	var err error
	fail := func(key, v, want string) {
		if err == nil {
			err = fmt.Errorf("params.extra.%s: %q: want %s", key, v, want)
		}
	}
	flag := func(key, v string, to *bool) {
		switch v {
		case "":
		case "true", "on":
			*to = true
		case "false", "off":
			*to = false
		default:
			fail(key, v, "true or false")
		}
	}
	num := func(key, v string, to *float64) {
		if v == "" {
			return
		}
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil {
			fail(key, v, "a number")
		}
		*to = f
	}
	integer := func(key, v string, to *int) {
		if v == "" {
			return
		}
		n, perr := strconv.Atoi(v)
		if perr != nil {
			fail(key, v, "an integer")
		}
		*to = n
	}
	span := func(key, v string, lo, hi *float64) {
		if v == "" {
			return
		}
		a, b, ok := strings.Cut(v, "-")
		x, e1 := strconv.ParseFloat(a, 64)
		y, e2 := strconv.ParseFloat(b, 64)
		if !ok || e1 != nil || e2 != nil {
			fail(key, v, "MIN-MAX seconds")
		}
		*lo, *hi = x, y
	}
	num("gap_s", e.GapS, &p.GapS)
	p.Faults, p.Incident, p.FaultSchedule = e.Faults, e.Incident, e.FaultSchedule
	p.Workload = e.Workload
	integer("fio_rate_iops", e.FioRateIOPS, &p.FioRateIOPS)
	if e.RunID != "" {
		if p.Kube == nil {
			p.Kube = &KubeParams{}
		}
		p.Kube.RunID = e.RunID
	}
	m.ControlPlane, m.Operator, m.ReconnectReset, m.KernelDNR = e.ControlPlane, e.Operator, e.ReconnectReset, e.KernelDNR
	m.CSIRestore = e.CSIRestore
	integer("namespaces_per_volume", e.NamespacesPerVolume, &m.NamespacesPerVolume)
	integer("namespaced_volumes", e.NamespacedVolumes, &m.NamespacedVolumes)
	flag("lvol_monitor", e.LvolMonitor, &m.LvolMonitor)
	flag("release_sources", e.ReleaseSources, &m.ReleaseSources)
	flag("listener_race", e.ListenerRace, &m.ListenerRace)
	flag("nsid_divergence", e.NSIDDivergence, &m.NSIDDivergence)
	flag("target_dnr", e.TargetDNR, &m.TargetDNR)
	flag("hosts_are_nodes", e.HostsAreNodes, &m.HostsAreNodes)
	flag("pods", e.Pods, &m.Pods)
	num("swap_readd_fail", e.SwapReaddFail, &m.SwapReaddFail)
	num("pod_tolerance_s", e.PodToleranceS, &m.PodToleranceS)
	span("job_start_s", e.JobStartS, &m.JobStartMinS, &m.JobStartMaxS)
	span("sync_s", e.SyncS, &m.SyncMinS, &m.SyncMaxS)
	return err
}

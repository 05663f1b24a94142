package nvmeof

// MissingEndpoints returns the endpoints of expected ("ip:port", IPv6
// bracketed; canonicalized with CanonicalizeEndpoint, compared raw when that
// fails) for which subsystem nqn on host attached has no controller, in the
// order of expected, canonical, without duplicates. Matching is by ip:port,
// never by address alone: an attached controller at 10.0.0.112:4426 does not
// satisfy an expected 10.0.0.112:4428. Every controller not being deleted
// counts as attached, broken ones included (connecting, live with no leg):
// those are leaks or not-live findings, not missing paths.
func MissingEndpoints(expected []string, attached HostState, nqn string) []string {
	have := map[string]bool{}
	for _, s := range attached.SubsystemsByNQN(nqn) {
		for _, c := range s.Controllers {
			if !c.State.Deleting() {
				have[c.Address.Key()] = true
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range expected {
		k := EndpointKey(e)
		if !have[k] && !seen[k] {
			out = append(out, k)
		}
		seen[k] = true
	}
	return out
}

// StaleEndpoints returns the controllers of subsystem nqn on host attached,
// not being deleted, whose ip:port is none of expected (compared as in
// MissingEndpoints), in teardown order. It is Inspect's stale-endpoint rule
// with bare ip:port targets (any transport).
func StaleEndpoints(expected []string, attached HostState, nqn string) []Controller {
	want := map[string]bool{}
	for _, e := range expected {
		want[EndpointKey(e)] = true
	}
	var all []Controller
	for _, s := range attached.SubsystemsByNQN(nqn) {
		all = append(all, s.Controllers...)
	}
	var out []Controller
	for _, c := range TeardownOrder(all) {
		if !c.State.Deleting() && !want[c.Address.Key()] {
			out = append(out, c)
		}
	}
	return out
}

// EndpointTargets turns "ip:port" strings into Targets for Inspect (any
// transport, the given NQN). Strings that are not ip:port keep their text as
// Traddr and match nothing but an identical raw address.
func EndpointTargets(nqn string, endpoints []string) []Target {
	out := make([]Target, 0, len(endpoints))
	for _, e := range endpoints {
		t := Target{NQN: nqn, Traddr: e}
		if host, port, ok := splitEndpoint(EndpointKey(e)); ok {
			t.Traddr, t.Trsvcid = host, port
		}
		out = append(out, t)
	}
	return out
}

// EndpointKey is the key endpoints are compared by: the canonical "ip:port"
// of e (IPv6 bracketed, IPv4-mapped addresses unmapped, per
// CanonicalizeEndpoint), or e unchanged when it is not an ip:port.
func EndpointKey(e string) string {
	if c, err := CanonicalizeEndpoint(e); err == nil {
		return c
	}
	return e
}

package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// Fault selections of fiomig run --faults.
const (
	FaultsDefault = "default"
	FaultsNone    = "none"
)

// ParseFaultKinds checks a --faults value: "default", "none", or a
// comma-separated list of fault kinds (faults.Kinds). It returns the kinds
// asked for (nil for default: every kind; empty for none).
func ParseFaultKinds(v string) ([]string, error) {
	switch v {
	case FaultsDefault:
		return nil, nil
	case FaultsNone:
		return []string{}, nil
	}
	var kinds []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(faults.Kinds, k) {
			return nil, fmt.Errorf("unknown fault kind %q (want default, none, or a comma-separated list of %s)", k, strings.Join(faults.Kinds, ", "))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// FaultSchedule resolves a run's fault selection on topology: the fault
// file's schedule when file is not "", else faults.Default drawn from seed
// for the kinds (nil = every kind, empty = none) over p.Migrations.
func FaultSchedule(seed int64, p record.Params, topo record.Topology, kinds []string, file string) ([]record.FaultSpec, error) {
	if file != "" {
		return faults.ParseFile(file)
	}
	if kinds != nil && len(kinds) == 0 {
		return []record.FaultSpec{}, nil
	}
	var nodes, hosts []string
	for _, n := range topo.Nodes {
		nodes = append(nodes, n.Name)
	}
	for _, h := range topo.Hosts {
		hosts = append(hosts, h.Name)
	}
	// The default schedule's stream is the run seed's, offset so that it
	// does not repeat the world's draws.
	return faults.Default(seed, faults.DefaultOptions{Migrations: p.Migrations, Nodes: nodes, Hosts: hosts, Kinds: kinds})
}

package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
)

func TestExperimentIncident(t *testing.T) {
	if os.Getenv("SIMEXP") == "" {
		t.Skip("experiment")
	}
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		for seed := int64(1); seed <= 5; seed++ {
			w := newWorld(t, Config{Seed: seed, Hosts: 3, HostsAreNodes: true, Volumes: 10, Pods: true, Operator: op, ReconnectReset: os.Getenv("RESET")})
			advance(t, w, 1)
			faulted := 0
			w.SetPhaseHook(func(m *Migration, ph string) {
				if ph == PhaseValidating && faulted < 3 {
					faulted++
					n := w.nodes[w.rng.Intn(len(w.nodes))]
					w.DropConnects(n.Name)
					w.after(40, func() { w.StopDroppingConnects(n.Name) })
				}
			})
			for i := 0; i < 23; i++ {
				vi := w.rng.Intn(10)
				if _, err := w.StartMigration(w.volumes[vi].NQN); err != nil {
					t.Fatal(err)
				}
				for {
					advance(t, w, w.Now()+1)
					if w.volumes[vi].migration == nil {
						break
					}
				}
				advance(t, w, w.Now()+5)
			}
			advance(t, w, w.Now()+9000-60)
			rej0 := int64(0)
			for _, n := range w.nodes {
				rej0 += n.rejected
			}
			advance(t, w, w.Now()+60)
			rej := int64(0)
			for _, n := range w.nodes {
				rej += n.rejected
			}
			failed, leakCaused := 0, 0
			var reasons []string
			for _, m := range w.migrations {
				if m.Phase == PhaseFailed {
					failed++
					if f := m.Failure; f != nil && strings.HasPrefix(f.Origin, "mig-") && f.Origin != m.ID {
						leakCaused++
					}
					if m.Failure != nil {
						reasons = append(reasons, fmt.Sprintf("%s<-%s:%s", m.ID, m.Failure.Origin, trunc(m.Failure.Detail, 60)))
					}
				}
			}
			ctrls, expected, leaks, conn, zero := 0, 0, 0, 0, 0
			for _, h := range w.hosts {
				st := h.State()
				for _, s := range st.Subsystems {
					for _, c := range s.Controllers {
						ctrls++
						pub := w.Endpoints(s.NQN)
						stale := !containsStr(pub, c.Endpoint())
						if c.State == nvmeof.StateConnecting {
							conn++
						}
						if c.State == nvmeof.StateLive && len(c.Legs) == 0 {
							zero++
						}
						if stale || c.State != nvmeof.StateLive || len(c.Legs) == 0 {
							leaks++
						}
					}
				}
			}
			for _, v := range w.volumes {
				expected += len(v.Consumers) * len(w.Endpoints(v.NQN))
			}
			killed := 0
			for _, p := range w.pods {
				if p.Dead {
					killed++
				}
			}
			if os.Getenv("DUMP") != "" {
				for _, h := range w.hosts {
					for _, c := range h.ctrls {
						if c.State != nvmeof.StateLive {
							fmt.Printf("   %s %s %s %s origin=%s tmo=%d\n", h.Name, c.Name(), c.Spec.Addr(), c.State, c.Origin, c.Spec.Options.CtrlLossTmo)
						}
					}
				}
			}
			fmt.Printf("%s seed %d: failed %d (leak-caused %d) ctrls %d/%d leaks %d (connecting %d zero-ns %d) rej/min %d pods killed %d\n",
				op, seed, failed, leakCaused, ctrls, expected, leaks, conn, zero, rej-rej0, killed)
			if os.Getenv("V") != "" {
				for _, r := range reasons {
					fmt.Println("   ", r)
				}
			}
		}
	}
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/fiomig/fiomig/reports"
)

// Filter selects entries of the history; empty fields select all.
type Filter struct {
	Branch, Cluster, Commit string
	// Last keeps only the last Last entries of the series (0: all).
	Last int
}

// Entries returns the entries f selects in series order: by started time,
// then by the order they were added (seq). Figures and member check
// verdicts are filled in; members' stored runs are not (RunSet reads them).
func (s *Store) Entries(ctx context.Context, f Filter) ([]Entry, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"branch", f.Branch}, {"cluster", f.Cluster}, {"commit_sha", f.Commit}} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, fmt.Sprintf("%s = $%d", c.col, len(args)))
		}
	}
	q := "SELECT id, seq, kind, dir, started_unix_s, commit_sha, branch, cluster, image, seeds, config, verdict FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started_unix_s, seq"
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.where, err)
	}
	var out []Entry
	index := map[string]int{}
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.ID, &e.Seq, &e.Kind, &e.Dir, &e.StartedUnixS, &e.Commit, &e.Branch, &e.Cluster, &e.Image, &e.Seeds, &e.Config, &e.Verdict); err != nil {
			rows.Close()
			return nil, fmt.Errorf("history %s: %w", s.where, err)
		}
		e.RunID = e.ID
		e.Figures = map[string]float64{}
		index[e.ID] = len(out)
		out = append(out, e)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.where, err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.where, err)
	}
	if f.Last > 0 && len(out) > f.Last {
		out = out[len(out)-f.Last:]
		index = map[string]int{}
		for i, e := range out {
			index[e.ID] = i
		}
	}
	if err := s.scan(ctx, "SELECT run_id, name, value FROM figures", func(sc func(...any) error) error {
		var id, name string
		var v float64
		if err := sc(&id, &name, &v); err != nil {
			return err
		}
		if i, ok := index[id]; ok {
			out[i].Figures[name] = v
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.scan(ctx, "SELECT run_id, member, seed FROM members ORDER BY run_id, member", func(sc func(...any) error) error {
		var id string
		var member int
		var seed int64
		if err := sc(&id, &member, &seed); err != nil {
			return err
		}
		if i, ok := index[id]; ok {
			for len(out[i].MemberSeeds) <= member {
				out[i].MemberSeeds = append(out[i].MemberSeeds, 0)
				out[i].Checks = append(out[i].Checks, map[string]string{})
			}
			out[i].MemberSeeds[member] = seed
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.scan(ctx, "SELECT run_id, member, name, verdict FROM checks", func(sc func(...any) error) error {
		var id, name, verdict string
		var member int
		if err := sc(&id, &member, &name, &verdict); err != nil {
			return err
		}
		if i, ok := index[id]; ok && member < len(out[i].Checks) {
			out[i].Checks[member][name] = verdict
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// scan runs q and calls fn with each row's Scan.
func (s *Store) scan(ctx context.Context, q string, fn func(scan func(...any) error) error) error {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("history %s: %w", s.where, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return fmt.Errorf("history %s: %w", s.where, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("history %s: %w", s.where, err)
	}
	return nil
}

// RunSet returns the stored runs of the entries ids (their members: a
// sweep's seeds) as one reports.RunSet named name, in the order given,
// each member's runs in member order. A run's Dir is where it was added
// from (it need not exist any more).
func (s *Store) RunSet(ctx context.Context, name string, ids []string) (reports.RunSet, error) {
	set := reports.RunSet{Dir: name, Sweep: true}
	for _, id := range ids {
		rows, err := s.db.QueryContext(ctx, "SELECT m.dir, m.plan, m.summary, r.dir FROM members m JOIN runs r ON r.id = m.run_id WHERE m.run_id = $1 ORDER BY m.member", id)
		if err != nil {
			return set, fmt.Errorf("history %s: %w", s.where, err)
		}
		n := 0
		for rows.Next() {
			var rel, base string
			var pb, sb []byte
			if err := rows.Scan(&rel, &pb, &sb, &base); err != nil {
				rows.Close()
				return set, fmt.Errorf("history %s: %w", s.where, err)
			}
			r := reports.StoredRun{Dir: base}
			if rel != "." {
				r.Dir = base + "/" + rel
			}
			if err := ungz(pb, &r.Plan); err != nil {
				rows.Close()
				return set, fmt.Errorf("history %s: run %s: stored plan.json: %w", s.where, id, err)
			}
			if err := ungz(sb, &r.Summary); err != nil {
				rows.Close()
				return set, fmt.Errorf("history %s: run %s: stored summary.json: %w", s.where, id, err)
			}
			set.Runs = append(set.Runs, r)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return set, fmt.Errorf("history %s: %w", s.where, err)
		}
		if n == 0 {
			return set, fmt.Errorf("history %s: run %s: %w", s.where, id, errNotFound)
		}
	}
	return set, nil
}

// verdictOf is the worst verdict of check name over an entry's members, ""
// when no member has it.
func verdictOf(e Entry, name string) string {
	v := ""
	for _, c := range e.Checks {
		if cv, ok := c[name]; ok {
			v = worse(v, cv)
		}
	}
	return v
}

// Package history is fiomig's store of nightly results and what it reads
// from them (fiomig history): Add files a run or sweep directory — keyed
// by run id, idempotent, labelled with commit, branch, cluster and image —
// with its figures (package ci's), every member run's check verdicts and
// its plan.json and summary.json; Entries reads the series back in order;
// WriteTrends plots a figure across runs (reports.TrendBytes, the report's
// style); Flakes gives each check's flip rate between consecutive runs of
// one group with a Wilson interval; Changes finds change points in a
// figure's series (EDivisive: E-divisive means with a permutation test)
// and names the first run after each shift; RunSet gives the last runs to
// reports.Compare (fiomig compare --history).
//
// The store is SQL through database/sql: SQLite by default (modernc.org/
// sqlite, pure Go: no cgo, no server) or PostgreSQL for a team
// (github.com/jackc/pgx/v5/stdlib), with versioned schema migrations
// (Migrations) and one writer at a time (SQLite's write lock, PostgreSQL's
// advisory lock), so two jobs adding at once are safe.
//
// Import direction (architecture_test.go): history may import record,
// checks, reports and ci (and the leaves they build on); nothing that runs
// anything. See docs/history.md.
package history

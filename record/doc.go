// Package record holds the run record's types — plan.json, timeline.jsonl,
// summary.json (docs/run-record.md) — and their writer and reader.
//
// The record is the contract between running and reporting: the checks are
// pure functions of it. Timeline kinds and fields may be added, never
// renamed. The timeline writer appends one complete line per write, or
// (batched) one write per sampling tick, so a killed run keeps what it saw.
// Format version 2 records a host's state only when it changed, with one
// heartbeat line per tick for the unchanged hosts (FORMAT.md); Expander and
// ScanStates turn either version into per-tick states.
//
// sweep.json (Sweep, written by `fiomig sweep`) is the record of many seeds
// run with the same flags: format (SweepFormat), the sweep's command, the
// run flags, per seed its verdict, exit code, run directory, rerun command,
// failed and inconclusive checks and each migration's longest pause (the
// most any consumer host saw) with whether it is over the pause bound; then
// counts per verdict, the distribution of the longest pause per migration
// over all seeds (p50/p90/p99/max, method named) and the fraction of
// migrations over the bound with its 95 % interval (method named). Like the
// run record, its fields may be added, never renamed.
//
// record is a leaf: it imports only the standard library.
package record

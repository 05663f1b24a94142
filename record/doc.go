// Package record holds the run record's types — plan.json, timeline.jsonl,
// summary.json (DESIGN.md "The run record") — and their writer and reader.
//
// The record is the contract between running and reporting: the checks are
// pure functions of it. Timeline kinds and fields may be added, never
// renamed. The timeline writer appends one complete line per write, or
// (batched) one write per sampling tick, so a killed run keeps what it saw.
// Format version 2 records a host's state only when it changed, with one
// heartbeat line per tick for the unchanged hosts (FORMAT.md); Expander and
// ScanStates turn either version into per-tick states.
//
// record is a leaf: it imports only the standard library.
package record

// Package record holds the run record's types — plan.json, timeline.jsonl,
// summary.json (DESIGN.md "The run record") — and their writer and reader.
//
// The record is the contract between running and reporting: the checks are
// pure functions of it. Timeline kinds and fields may be added, never
// renamed. The timeline writer appends one complete line per write, so a
// killed run keeps what it saw.
//
// record is a leaf: it imports only the standard library.
package record

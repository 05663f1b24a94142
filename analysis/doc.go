// Package analysis is the incident analysis: from the record of one run of
// a catalogued incident (plan.json, timeline.jsonl, summary.json) it
// computes the incident's figures — validation failures by cause, leaked
// controllers by kind and origin, controllers against expected, CONNECT
// rejections per minute, pods killed and why (ComputeIncidentFigures) —,
// judges the incident file's expectations on them (JudgeBands, ShapeOf),
// and compares the prefix and fixed operators over seeds by cause with
// paired t-intervals (JudgeOverSeeds). It judges from the record alone and
// renders nothing: reproduce.md is reports' (reports/incident.go).
//
// analysis may import record, checks, incidents and the leaves.
package analysis

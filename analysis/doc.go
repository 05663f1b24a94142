// Package analysis is the incident analysis: from the record of one run of
// a catalogued incident (plan.json, timeline.jsonl, summary.json) it
// computes the incident's figures — validation failures by cause, leaked
// controllers by kind and origin, controllers against expected, CONNECT
// rejections per minute, pods killed and why (ComputeIncidentFigures) —,
// judges the incident file's expectations on them (JudgeBands, ShapeOf),
// sets the incident's observed symptoms beside them (Symptoms: reproduced,
// not reproduced or not modelled, and the profile's distance), compares
// the prefix and fixed operators over seeds by cause with paired
// t-intervals (JudgeOverSeeds; "not exercised" when nothing the fix removes
// occurred), and judges and ranks the combinations of the incident's
// hypotheses (JudgeHypothesis, RankHypotheses). It judges from the record
// alone and renders nothing: reproduce.md is reports' (reports/incident.go,
// reports/symptoms.go).
//
// analysis may import record, checks, incidents and the leaves.
package analysis

// Package scenario runs one scenario on a backend: it starts migrations one
// after another, samples every host on the backend's clock, lets the world
// settle, and leaves a complete run record (plan.json, timeline.jsonl)
// that the checks and reports then judge from the record alone. Run is the
// main job (virtual time); RunFio runs real fio through FUSE on the wall
// clock; Reproduce replays a catalogued incident (package incidents: one
// YAML file each) through Run, then hands the record to package analysis
// (figures, expected bands, the operators' comparison over seeds) and
// reports (reproduce.md).
//
// scenario may import backend, collectors, faults, checks, reports, record,
// workload, sim, incidents, analysis and the leaves (nvmeof, fio).
package scenario

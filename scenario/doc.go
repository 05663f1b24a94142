// Package scenario runs one scenario on a backend: it starts migrations one
// after another, samples every host on the backend's clock, lets the world
// settle, and leaves a complete run record (plan.json, timeline.jsonl)
// that the checks and reports then judge from the record alone. Run is the
// main job (virtual time); RunFio runs real fio through FUSE on the wall
// clock; Reproduce replays a catalogued incident (package incidents: one
// YAML file each) and judges its expected bands (bands.go) and, over seeds,
// the operators' comparison by cause (reproduce_compare.go).
//
// scenario may import backend, collectors, faults, checks, reports, record,
// workload, sim, incidents and the leaves (nvmeof, fio).
package scenario

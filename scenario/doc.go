// Package scenario runs one scenario on a backend: it starts migrations one
// after another, samples every host on the backend's clock, lets the world
// settle, and leaves a complete run record (plan.json, timeline.jsonl)
// that the checks and reports then judge from the record alone.
//
// scenario may import backend, collectors, faults, checks, reports, record
// and the leaves (nvmeof, fio).
package scenario

// Package incidents is the incident catalogue as data: one YAML file per
// incident (topology, model switches, operators, kernel switches, faults,
// pacing, and the expected figures as bands, each marked with its source:
// sourced, inference or assumption). The catalogue's files are embedded in
// the binary; Load reads one more file from anywhere (a new incident needs
// no Go). `fiomig reproduce NAME` runs an incident through package scenario,
// which maps its fields onto the simulator and judges the bands.
//
// incidents may import record (the fault spec type) and sigs.k8s.io/yaml.
package incidents

// Package incidents is the incident catalogue as data: one YAML file per
// incident (topology, model switches, operators, kernel switches, faults,
// pacing, and the expected figures as bands, each marked with its source:
// sourced, inference or assumption; optionally the incident's observed
// symptoms and its hypotheses — the unknowns no source settles, each with
// alternatives that switch the world or replace the faults, combined by
// Combinations). The catalogue's files are embedded in the binary; LoadFile
// reads one more file from anywhere (a new incident needs no Go).
// `fiomig reproduce NAME` runs an incident through the run library
// (harness), which maps its fields onto the simulator, and analysis judges
// the bands and sets the symptoms beside the model's figures.
//
// Errors name the file, the line (go.yaml.in/yaml/v3's node positions) and
// the field. incidents may import record (the fault spec type),
// sigs.k8s.io/yaml and go.yaml.in/yaml/v3.
package incidents

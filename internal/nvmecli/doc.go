// Package nvmecli runs the real nvme-cli on a sysfs tree on disk, for the
// tests that check fiomig's reading of a tree against nvme-cli's (the sim's
// rendered hosts, the captures "fiomig hosts" reads).
//
// Only _test.go files import it. It imports the standard library only.
package nvmecli

package tooltest

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records whether Skip or Fatal was called.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestRequireSkipsOrFails(t *testing.T) {
	missing := errors.New("fio not found")
	for _, tc := range []struct {
		env                string
		err                error
		wantSkip, wantFail bool
	}{
		{"", missing, true, false},
		{"1", missing, false, true},
		{"1", nil, false, false},
		{"", nil, false, false},
	} {
		t.Setenv(Env, tc.env)
		r := &recorder{TB: t}
		Require(r, tc.err)
		if r.skipped != tc.wantSkip || r.failed != tc.wantFail {
			t.Errorf("%s=%q, missing %v: skipped %v failed %v; want %v %v", Env, tc.env, tc.err, r.skipped, r.failed, tc.wantSkip, tc.wantFail)
		}
	}
}

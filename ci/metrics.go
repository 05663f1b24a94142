package ci

import (
	"bytes"
	"fmt"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/fiomig/fiomig/reports"
)

// MetricsFile is the OpenMetrics file Publish writes (GitLab's metrics
// report reads it: `artifacts: reports: metrics: metrics.txt`).
const MetricsFile = "metrics.txt"

// Metrics renders runs' figures and check verdicts in the OpenMetrics text
// format, written by prometheus/common's expfmt.MetricFamilyToOpenMetrics
// and closed by its "# EOF": a gauge fiomig_<figure> per known figure
// (with its unit, seconds, as OpenMetrics' UNIT and the name's suffix),
// fiomig_runs, and per check (label check) fiomig_check_failed_runs and
// fiomig_check_inconclusive_runs — the runs (1 for a run, the seeds of a
// sweep) where it failed or was inconclusive. No label changes from run to
// run, so GitLab compares each series between a merge request and its
// target. Equal inputs give equal bytes.
func Metrics(runs []reports.StoredRun) ([]byte, error) {
	var fams []*dto.MetricFamily
	gauge := func(name, unit, help string, v float64, labels ...string) *dto.MetricFamily {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
		for i := 0; i+1 < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
		}
		f := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
		if unit != "" {
			f.Unit = proto.String(unit)
		}
		return f
	}
	for _, f := range Figures(runs) {
		if f.Known {
			fams = append(fams, gauge("fiomig_"+f.Name, f.Unit, f.Help, f.Value))
		}
	}
	fams = append(fams, gauge("fiomig_runs", "", "runs judged (1, or a sweep's seeds)", float64(len(runs))))
	failed := &dto.MetricFamily{Name: proto.String("fiomig_check_failed_runs"), Help: proto.String("runs in which the check failed"), Type: dto.MetricType_GAUGE.Enum()}
	incon := &dto.MetricFamily{Name: proto.String("fiomig_check_inconclusive_runs"), Help: proto.String("runs in which the check was inconclusive"), Type: dto.MetricType_GAUGE.Enum()}
	var names []string
	count := map[string][2]int{}
	for _, r := range runs {
		for _, c := range r.Summary.Checks {
			if _, ok := count[c.Name]; !ok {
				names = append(names, c.Name)
			}
			n := count[c.Name]
			switch c.Verdict {
			case "fail":
				n[0]++
			case "inconclusive":
				n[1]++
			}
			count[c.Name] = n
		}
	}
	slices.Sort(names)
	for _, name := range names {
		for i, f := range []*dto.MetricFamily{failed, incon} {
			f.Metric = append(f.Metric, &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("check"), Value: proto.String(name)}},
				Gauge: &dto.Gauge{Value: proto.Float64(float64(count[name][i]))}})
		}
	}
	if len(names) > 0 {
		fams = append(fams, failed, incon)
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToOpenMetrics(&b, f); err != nil {
			return nil, fmt.Errorf("%s: %w", MetricsFile, err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(&b); err != nil {
		return nil, fmt.Errorf("%s: %w", MetricsFile, err)
	}
	return b.Bytes(), nil
}

package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fiomig/fiomig/record"
)

// laneColors colours the lane states: accessible greens, ANA transitions
// yellow/orange/red, controller states purple (reconnecting) and greys
// (going away or serving nothing).
var laneColors = map[string]color.RGBA{
	"optimized":        {R: 0x2d, G: 0xa4, B: 0x4e, A: 0xff},
	"non-optimized":    {R: 0x8c, G: 0xd4, B: 0x8c, A: 0xff},
	"change":           {R: 0xe3, G: 0xb3, B: 0x41, A: 0xff},
	"inaccessible":     {R: 0xfb, G: 0x8f, B: 0x44, A: 0xff},
	"persistent-loss":  {R: 0xa4, G: 0x0e, B: 0x26, A: 0xff},
	LaneMixed:          {R: 0xbf, G: 0x87, B: 0x00, A: 0xff},
	LaneNoLeg:          {R: 0xaf, G: 0xb8, B: 0xc1, A: 0xff},
	"new":              {R: 0x54, G: 0xae, B: 0xff, A: 0xff},
	"connecting":       {R: 0x82, G: 0x50, B: 0xdf, A: 0xff},
	"resetting":        {R: 0xd2, G: 0xa8, B: 0xff, A: 0xff},
	"deleting":         {R: 0x57, G: 0x60, B: 0x6a, A: 0xff},
	"deleting (no IO)": {R: 0x57, G: 0x60, B: 0x6a, A: 0xff},
	"dead":             {R: 0x24, G: 0x29, B: 0x2f, A: 0xff},
}

var (
	colorUnknownState = color.RGBA{R: 0xff, G: 0x00, B: 0xff, A: 0xff}
	colorPause        = color.NRGBA{R: 0xd0, G: 0x10, B: 0x10, A: 0x60}
	// Faults are teal, apart from the controller states' purples
	// (TestSwimlaneLegendColoursApart).
	colorFaultPause = color.NRGBA{R: 0x00, G: 0x83, B: 0x8f, A: 0x50}
	colorFault      = color.NRGBA{R: 0x00, G: 0x83, B: 0x8f, A: 0xc0}
	colorFioOK      = color.RGBA{R: 0xdd, G: 0xf4, B: 0xff, A: 0xff}
	colorFioGap     = color.RGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xff}
	colorPhase      = color.RGBA{R: 0x24, G: 0x29, B: 0x2f, A: 0xff}
)

func stateColor(s string) color.Color {
	if c, ok := laneColors[s]; ok {
		return c
	}
	return colorUnknownState
}

// rect is a filled rectangle in data coordinates.
type rect struct {
	x0, x1, y0, y1 float64
	c              color.Color
}

// label is text in data coordinates, drawn left-aligned and vertically
// centred at (x, y).
type label struct {
	x, y float64
	text string
}

// vline is a dashed vertical line in data coordinates.
type vline struct{ x, y0, y1 float64 }

// shapes is a plot.Plotter of rectangles, dashed vertical lines and
// labels, drawn in that order and clipped to the data area.
type shapes struct {
	rects  []rect
	lines  []vline
	labels []label
	style  draw.TextStyle
	x0, x1 float64
	y0, y1 float64
}

// Plot implements plot.Plotter.
func (s *shapes) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, r := range s.rects {
		a, b := vg.Point{X: tx(r.x0), Y: ty(r.y0)}, vg.Point{X: tx(r.x1), Y: ty(r.y1)}
		pts := c.ClipPolygonXY([]vg.Point{a, {X: b.X, Y: a.Y}, b, {X: a.X, Y: b.Y}})
		c.FillPolygon(r.c, pts)
	}
	ls := draw.LineStyle{Color: colorPhase, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	for _, l := range s.lines {
		c.StrokeLines(ls, c.ClipLinesXY([]vg.Point{{X: tx(l.x), Y: ty(l.y0)}, {X: tx(l.x), Y: ty(l.y1)}})...)
	}
	for _, l := range s.labels {
		pt := vg.Point{X: tx(l.x), Y: ty(l.y)}
		if c.Contains(pt) {
			c.FillText(s.style, pt, l.text)
		}
	}
}

// DataRange implements plot.DataRanger.
func (s *shapes) DataRange() (xmin, xmax, ymin, ymax float64) { return s.x0, s.x1, s.y0, s.y1 }

// LegendItem is one entry of the legend strip drawn under a plot (by
// SwimlaneBytes, ECDFBytes, FioPlotBytes): a swatch of Fill, or a dashed
// line when Dashed, and Text.
type LegendItem struct {
	Text   string
	Fill   color.Color
	Dashed bool
}

// Swimlane builds the swimlane plot of one cutover. Rows from the top: the
// faults overlapping the span (one bar per fault, labelled kind@target,
// from inject to recover; an open fault reaches the span's end), the
// migration's phases (a dashed line across every row at each phase line,
// labelled), then per consumer host one row per path (ip:port, with its
// role), each segment coloured by its state (laneColors), and, when fio ran
// on the subsystem, a row with fio's I/O gaps in black; each host's pause
// windows are shaded red across that host's rows, the windows a fault's
// silent stall began in its span (HostPauses.FaultWindows) teal, as the
// fault bars are. The x axis is seconds since run start. It returns the
// plot, its legend and the height the caller should render it at.
func Swimlane(plan record.Plan, c Cutover) (*plot.Plot, []LegendItem, vg.Length) {
	p := plot.New()
	m := c.Migration
	title := fmt.Sprintf("%s (%s): %s", m.ID, shortOr(m.NQN), m.Outcome)
	if m.Reason != "" {
		r := []rune(m.Reason)
		if len(r) > 90 {
			r = append(r[:89], '…')
		}
		title += " — " + string(r)
	}
	if m.NoCutover {
		title += "; no cutover"
	} else {
		var worst float64
		for _, hp := range m.Hosts {
			worst = math.Max(worst, hp.LongestPauseS)
		}
		title += fmt.Sprintf(", longest pause %s, %d freeze(s)", secs(worst), m.Freezes)
	}
	p.Title.Text = title
	p.X.Label.Text = "seconds since run start"
	p.X.Min, p.X.Max = c.FromS, c.ToS
	p.X.Tick.Marker = niceTicks{Max: 10}

	small := p.Y.Tick.Label
	small.Font.Size = vg.Points(7)
	small.XAlign, small.YAlign = draw.XLeft, draw.YCenter
	s := &shapes{style: small, x0: c.FromS, x1: c.ToS}

	// Rows, top first.
	type row struct {
		name string
		host string
	}
	var rows []row
	faultRow, phaseRow := -1, -1
	if len(c.Faults) > 0 {
		faultRow = len(rows)
		rows = append(rows, row{name: "faults"})
	}
	phaseRow = len(rows)
	rows = append(rows, row{name: "phases"}, row{}) // two label levels
	laneRow := map[int]int{}
	fioRow := map[string]int{}
	for _, h := range c.Hosts {
		for i, l := range c.Lanes {
			if l.Host != h {
				continue
			}
			name := h + " " + l.Address
			if l.Role != "" {
				name += " (" + l.Role + ")"
			}
			laneRow[i] = len(rows)
			rows = append(rows, row{name: name, host: h})
		}
		if c.FioRan {
			if _, ok := c.FioGaps[h]; ok {
				fioRow[h] = len(rows)
				rows = append(rows, row{name: h + " fio I/O", host: h})
			}
		}
	}
	n := len(rows)
	y := func(r int) float64 { return float64(n - 1 - r) }
	const half = 0.36
	s.y0, s.y1 = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = s.y0, s.y1
	ticks := make(plot.ConstantTicks, n)
	for i, r := range rows {
		ticks[i] = plot.Tick{Value: y(i), Label: r.name}
	}
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = vg.Points(4)
	p.Y.Tick.LineStyle.Width = 0
	p.Title.Padding = vg.Points(8)
	p.Y.Tick.Label.Font.Size = vg.Points(8)

	used := map[string]bool{}
	for i, l := range c.Lanes {
		r, ok := laneRow[i]
		if !ok {
			continue
		}
		for _, sg := range l.Segments {
			s.rects = append(s.rects, rect{x0: sg.FromS, x1: sg.ToS, y0: y(r) - half, y1: y(r) + half, c: stateColor(sg.State)})
			used[sg.State] = true
		}
	}
	for _, h := range c.Hosts { // host order: equal inputs, equal bytes
		r, ok := fioRow[h]
		if !ok {
			continue
		}
		s.rects = append(s.rects, rect{x0: c.FromS, x1: c.ToS, y0: y(r) - half/2, y1: y(r) + half/2, c: colorFioOK})
		for _, g := range c.FioGaps[h] {
			s.rects = append(s.rects, rect{x0: g.StartS, x1: g.EndS, y0: y(r) - half, y1: y(r) + half, c: colorFioGap})
			used["fio gap"] = true
		}
		used["fio"] = true
	}
	// Pause windows over the lanes, translucent.
	for _, h := range c.Hosts {
		top, bottom := -1, -1
		for i, r := range rows {
			if r.host == h {
				if top < 0 {
					top = i
				}
				bottom = i
			}
		}
		if top < 0 {
			continue
		}
		for _, w := range m.Hosts[h].Windows {
			s.rects = append(s.rects, rect{x0: w[0], x1: w[1], y0: y(bottom) - 0.5, y1: y(top) + 0.5, c: colorPause})
			used["pause"] = true
		}
		for _, w := range m.Hosts[h].FaultWindows {
			s.rects = append(s.rects, rect{x0: w[0], x1: w[1], y0: y(bottom) - 0.5, y1: y(top) + 0.5, c: colorFaultPause})
			used["fault pause"] = true
		}
		// The pause anatomy's steps: a thin black mark across the host's
		// rows, numbered as anatomyStepNumbers.
		for _, a := range m.Hosts[h].Anatomy {
			for _, st := range a.Steps {
				if st.AtS == nil || *st.AtS < c.FromS || *st.AtS > c.ToS {
					continue
				}
				wd := (c.ToS - c.FromS) / 800
				s.rects = append(s.rects, rect{x0: *st.AtS - wd, x1: *st.AtS + wd, y0: y(bottom) - 0.5, y1: y(top) + 0.5, c: colorPhase})
				s.labels = append(s.labels, label{x: *st.AtS, y: y(top) + 0.3, text: anatomyStepNumbers[st.Step]})
				used["step"] = true
			}
		}
	}
	if faultRow >= 0 {
		// Pack overlapping faults into sub-rows of the faults row.
		var ends []float64
		sub := make([]int, len(c.Faults))
		for i, f := range c.Faults {
			k := 0
			for k < len(ends) && ends[k] > f.FromS {
				k++
			}
			if k == len(ends) {
				ends = append(ends, 0)
			}
			ends[k] = math.Min(f.ToS, c.ToS)
			sub[i] = k
		}
		h := 2 * half / float64(len(ends))
		for i, f := range c.Faults {
			y1 := y(faultRow) + half - float64(sub[i])*h
			x1 := math.Min(f.ToS, c.ToS)
			s.rects = append(s.rects, rect{x0: math.Max(f.FromS, c.FromS), x1: x1, y0: y1 - h*0.9, y1: y1, c: colorFault})
			s.labels = append(s.labels, label{x: math.Max(f.FromS, c.FromS), y: y1 - h*0.45, text: " " + f.Fault + "@" + f.Target})
		}
		used["fault"] = true
	}
	// Phase labels on two levels: a label goes to the first level whose
	// previous label ends before it starts (widths estimated on the data
	// area of a 9-inch plot less its y axis labels).
	perS := float64(swimlaneWidth-200) / math.Max(c.ToS-c.FromS, 1e-9)
	levelEnd := []float64{math.Inf(-1), math.Inf(-1)}
	for _, ph := range c.Phases {
		s.lines = append(s.lines, vline{x: ph.TS, y0: s.y0, y1: y(phaseRow) + half})
		text := " " + ph.Phase
		lv := 0
		if levelEnd[0] > ph.TS && levelEnd[1] <= levelEnd[0] {
			lv = 1
		}
		levelEnd[lv] = ph.TS + float64(small.Width(text))/perS
		s.labels = append(s.labels, label{x: ph.TS, y: y(phaseRow + lv), text: text})
		used["phase"] = true
	}
	p.Add(s)

	var legend []LegendItem
	for _, st := range laneStates {
		if used[st] {
			legend = append(legend, LegendItem{Text: st, Fill: stateColor(st)})
		}
	}
	for _, st := range slices.Sorted(maps.Keys(used)) { // sorted: equal inputs, equal bytes
		if _, known := laneColors[st]; !known && !isMarker(st) {
			legend = append(legend, LegendItem{Text: st + " (unknown state)", Fill: colorUnknownState})
		}
	}
	if used["pause"] {
		legend = append(legend, LegendItem{Text: "pause window", Fill: colorPause})
	}
	if used["fault pause"] {
		legend = append(legend, LegendItem{Text: "pause window a fault's silent stall began (the fault's, not judged)", Fill: colorFaultPause})
	}
	if used["fault"] {
		legend = append(legend, LegendItem{Text: "fault (inject to recover)", Fill: colorFault})
	}
	if used["phase"] {
		legend = append(legend, LegendItem{Text: "phase line", Dashed: true})
	}
	if used["fio"] {
		legend = append(legend, LegendItem{Text: "fio running", Fill: colorFioOK})
	}
	if used["fio gap"] {
		legend = append(legend, LegendItem{Text: "fio I/O gap", Fill: colorFioGap})
	}
	if used["step"] {
		legend = append(legend, LegendItem{Text: "pause steps: 1 source path lost (or a silent stall, 1' its end), 2 target controller live, 3 target ANA accessible, 4 first I/O completion", Fill: colorPhase})
	}
	height := vg.Length(n)*vg.Points(17) + vg.Points(90)
	return p, legend, height
}

// anatomyStepNumbers label a pause anatomy's steps on the swimlane.
var anatomyStepNumbers = map[string]string{
	record.StepSourceLost: " 1", record.StepTargetLive: " 2", record.StepTargetAccessible: " 3", record.StepFirstCompletion: " 4",
	record.StepSilentStall: " 1", record.StepStallEnded: " 1'",
}

func isMarker(s string) bool {
	switch s {
	case "pause", "fault pause", "fault", "phase", "fio", "fio gap", "step":
		return true
	}
	return false
}

// shortOr returns the part of nqn after its last ':' or nqn itself.
func shortOr(nqn string) string {
	if s := shortNQN(nqn); s != "" {
		return s
	}
	return nqn
}

// legendRowHeight is one row of a legend strip.
const legendRowHeight = vg.Length(13)

// legendHeight is the height of the strip that lays items out in rows
// across width w with style sty.
func legendHeight(items []LegendItem, sty draw.TextStyle, w vg.Length) vg.Length {
	if len(items) == 0 {
		return 0
	}
	return vg.Length(len(legendRows(items, sty, w)))*legendRowHeight + 6
}

func legendRows(items []LegendItem, sty draw.TextStyle, w vg.Length) [][]LegendItem {
	var rows [][]LegendItem
	var x vg.Length
	for _, it := range items {
		wi := 14 + sty.Width(it.Text) + 12
		if len(rows) == 0 || x+wi > w-20 {
			rows = append(rows, nil)
			x = 10
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], it)
		x += wi
	}
	return rows
}

// drawLegend draws items in rows into c, left to right.
func drawLegend(c draw.Canvas, items []LegendItem, sty draw.TextStyle) {
	sty.YAlign = draw.YCenter
	y := c.Max.Y - legendRowHeight/2 - 3
	for _, row := range legendRows(items, sty, c.Size().X) {
		x := c.Min.X + 10
		for _, it := range row {
			if it.Dashed {
				c.StrokeLine2(draw.LineStyle{Color: colorPhase, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}},
					x, y, x+10, y)
			} else {
				c.FillPolygon(it.Fill, []vg.Point{{X: x, Y: y - 4}, {X: x + 10, Y: y - 4}, {X: x + 10, Y: y + 4}, {X: x, Y: y + 4}})
			}
			c.FillText(sty, vg.Point{X: x + 14, Y: y}, it.Text)
			x += 14 + sty.Width(it.Text) + 12
		}
		y -= legendRowHeight
	}
}

// renderWithLegend draws p above a legend strip of items on a w × h
// canvas in format ("png", "svg") and returns the file's bytes.
func renderWithLegend(p *plot.Plot, items []LegendItem, w, h vg.Length, format string) ([]byte, error) {
	return renderStacked([]*plot.Plot{p}, items, w, h, format)
}

// renderStacked draws ps one above the other, their data areas aligned
// (plot.Align), above a legend strip of items, on a w × h canvas (plus the
// strip) in format, and returns the file's bytes.
func renderStacked(ps []*plot.Plot, items []LegendItem, w, h vg.Length, format string) ([]byte, error) {
	sty := ps[0].Legend.TextStyle
	sty.Font.Size = vg.Points(8)
	lh := legendHeight(items, sty, w)
	var cv vg.CanvasSizer
	var wt io.WriterTo
	var img *vgimg.Canvas
	if format == "png" {
		img = vgimg.New(w, h+lh) // encoded below, faster than PngCanvas
		cv = img
	} else {
		c, err := draw.NewFormattedCanvas(w, h+lh, format)
		if err != nil {
			return nil, fmt.Errorf("plot as %s: %w", format, err)
		}
		cv, wt = c, c
	}
	dc := draw.New(cv)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: w, Y: 0}, {X: w, Y: h + lh}, {X: 0, Y: h + lh}})
	area := draw.Crop(dc, 0, 0, lh, 0)
	if len(ps) == 1 {
		ps[0].Draw(area)
	} else {
		grid := make([][]*plot.Plot, len(ps))
		for i, p := range ps {
			grid[i] = []*plot.Plot{p}
		}
		cs := plot.Align(grid, draw.Tiles{Rows: len(ps), Cols: 1, PadY: vg.Points(4)}, area)
		for i, p := range ps {
			p.Draw(cs[i][0])
		}
	}
	if lh > 0 {
		drawLegend(draw.Crop(dc, 0, 0, 0, -h), items, sty)
	}
	var b bytes.Buffer
	if img != nil {
		// BestSpeed: a third of the default's encoding time for a few
		// percent more bytes on these flat-coloured plots.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&b, img.Image()); err != nil {
			return nil, fmt.Errorf("plot as png: %w", err)
		}
		return b.Bytes(), nil
	}
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plot as %s: %w", format, err)
	}
	return b.Bytes(), nil
}

// SwimlaneBytes renders Swimlane(plan, c) with its legend, 9 inches wide,
// in format ("png", "svg").
func SwimlaneBytes(plan record.Plan, c Cutover, format string) ([]byte, error) {
	p, items, h := Swimlane(plan, c)
	b, err := renderWithLegend(p, items, swimlaneWidth, h, format)
	if err != nil {
		return nil, fmt.Errorf("swimlane of %s: %w", c.Migration.ID, err)
	}
	return b, nil
}

// swimlaneWidth is the width of a swimlane plot.
const swimlaneWidth = 9 * vg.Inch

// SwimlaneFile is the file name (under PlotsDir) of migration id's
// swimlane in format ext ("png", "svg"); characters outside [A-Za-z0-9._-]
// become '_'.
func SwimlaneFile(id, ext string) string {
	return PlotsDir + "/swimlane-" + safeName(id) + "." + ext
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

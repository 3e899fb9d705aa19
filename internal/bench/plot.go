package bench

import (
	"errors"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotTables draws, for every table with a ratio column, a horizontal bar
// per row (labelled by the row's leading text cells), stacked in one PNG.
func plotTables(path, name string, ts []*table) error {
	var plots []*plot.Plot
	for _, t := range ts {
		col := ratioColumn(t)
		if col < 0 {
			continue
		}
		var vals plotter.Values
		var labels []string
		for _, r := range t.rows {
			if col >= len(r) {
				continue
			}
			v, ok := parseRatio(r[col])
			if !ok {
				continue
			}
			vals = append(vals, v)
			labels = append(labels, rowLabel(r, col))
		}
		if len(vals) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = shorten(t.title, 90)
		p.X.Label.Text = t.head[col] + " (higher is better unless the column says otherwise)"
		bars, err := plotter.NewBarChart(vals, vg.Points(12))
		if err != nil {
			return err
		}
		bars.Horizontal = true
		p.Add(bars)
		p.NominalY(labels...)
		p.X.Min = 0
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return errors.New("no table of " + name + " has a ratio column")
	}
	const w, rowH = 24 * vg.Centimeter, 7 * vg.Centimeter
	img := vgimg.New(w, rowH*vg.Length(len(plots)))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Centimeter / 2, PadX: vg.Centimeter / 2,
		PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rowLabel joins a row's cells before col that are not numbers.
func rowLabel(r []string, col int) string {
	var parts []string
	for i := 0; i < col; i++ {
		if _, ok := parseRatio(r[i]); ok || strings.ContainsAny(r[i], "0123456789") && strings.HasSuffix(r[i], "s") {
			continue
		}
		parts = append(parts, shorten(r[i], 36))
	}
	return strings.Join(parts, " / ")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

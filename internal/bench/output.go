package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// printed collects the tables of the running benchmark, for -json and -plot.
var printed []*table

// output is what the global flags ask for besides the text tables.
type output struct {
	json bool
	plot string
}

// parse takes -json and -plot FILE out of args, before or after NAME.
func (o *output) parse(args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-json" || a == "--json":
			o.json = true
		case a == "-plot" || a == "--plot":
			if i+1 >= len(args) {
				return nil, errors.New("bench: -plot needs a FILE.png")
			}
			i++
			o.plot = args[i]
		case strings.HasPrefix(a, "-plot=") || strings.HasPrefix(a, "--plot="):
			o.plot = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
		}
	}
	return rest, nil
}

// jsonTable is a table as -json prints it.
type jsonTable struct {
	Title   string              `json:"title"`
	Columns []string            `json:"columns"`
	Rows    []map[string]string `json:"rows"`
	Notes   []string            `json:"notes,omitempty"`
	LoadAvg string              `json:"loadavg"`
}

// write prints the tables as JSON and draws the plot, as asked.
func (o *output) write(name string, ts []*table) error {
	if o.json {
		out := struct {
			Benchmark string      `json:"benchmark"`
			Tables    []jsonTable `json:"tables"`
		}{Benchmark: name}
		for _, t := range ts {
			jt := jsonTable{Title: t.title, Columns: t.head, Notes: t.notes, LoadAvg: t.load}
			for _, r := range t.rows {
				m := map[string]string{}
				for i, c := range r {
					if i < len(t.head) {
						m[t.head[i]] = c
					}
				}
				jt.Rows = append(jt.Rows, m)
			}
			out.Tables = append(out.Tables, jt)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if o.plot != "" {
		if err := plotTables(o.plot, name, ts); err != nil {
			return fmt.Errorf("bench: -plot %s: %w", o.plot, err)
		}
	}
	return nil
}

// ratioColumn picks the column a plot shows: the first "vs ..." column.
func ratioColumn(t *table) int {
	for i, h := range t.head {
		if strings.HasPrefix(h, "vs ") || strings.Contains(h, " vs ") {
			return i
		}
	}
	return -1
}

// parseRatio reads a ratio cell ("0.93"); false for "-" and the like.
func parseRatio(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v, err == nil
}

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

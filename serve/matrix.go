package serve

import (
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/lockharness/lockharness/matrix"
)

// matrixPrefix is where matrices are shown: /matrix/ lists them,
// /matrix/<name> shows one (its heat map and every cell, linked to the
// cell's run report).
const matrixPrefix = "/matrix/"

// Matrices lists the names of the matrices in the store: the directories
// holding a matrix.json.
func (s *Server) Matrices() ([]string, error) {
	entries, err := fs.ReadDir(s.fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := fs.Stat(s.fsys, path.Join(e.Name(), matrix.JSONFile)); err == nil && st.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (s *Server) matrix(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSuffix(r.PathValue("name"), "/")
	if name == "" {
		names, err := s.Matrices()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = matrixListTmpl.Execute(w, struct {
			Store string
			Names []string
		}{s.store, names})
		return
	}
	clean, ok := cleanName(name)
	if !ok || strings.Contains(clean, "/") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	b, err := fs.ReadFile(s.fsys, path.Join(clean, matrix.JSONFile))
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var m matrix.Matrix
	if err := json.Unmarshal(b, &m); err != nil {
		http.Error(w, "matrix.json: "+err.Error(), http.StatusInternalServerError)
		return
	}
	type row struct {
		matrix.CellResult
		ID, Report string
	}
	rows := make([]row, len(m.Cells))
	for i, c := range m.Cells {
		rows[i] = row{CellResult: c, ID: c.ID()}
		if c.Dir != "" {
			rows[i].Report = runPrefix + escapePath(c.Dir) + "/"
		}
	}
	files := runPrefix + url.PathEscape(clean) + "/"
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = matrixTmpl.Execute(w, struct {
		Name, Shard, Tally, Heatmap, Files string
		Code                               int
		Rows                               []row
	}{clean, m.Shard, m.Tally.String(), files + matrix.HeatmapSVG, files, m.ExitCode(), rows})
}

// escapePath escapes each element of a slash-separated path.
func escapePath(p string) string {
	els := strings.Split(p, "/")
	for i, e := range els {
		els[i] = url.PathEscape(e)
	}
	return strings.Join(els, "/")
}

var matrixListTmpl = template.Must(template.New("matrices").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lockharness matrices</title></head>
<body style="font: 15px/1.45 system-ui, sans-serif; max-width: 1240px; margin: 0 auto; padding: 0 16px">
<h1>Matrices in {{.Store}}</h1><p><a href="/">all runs</a></p>
{{if .Names}}<ul id="matrices">{{range .Names}}<li><a href="/matrix/{{.}}">{{.}}</a></li>
{{end}}</ul>{{else}}<p>No matrix yet. Run one with <code>harness matrix --locks token,redlock --nemeses partition,clock --seeds 3</code>.</p>{{end}}
</body></html>
`))

var matrixTmpl = template.Must(template.New("matrix").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>matrix {{.Name}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1240px; padding: 0 16px 40px; background: #fafafa; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #ddd; padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.missed, .error, .not-run { background: #fff0f0; } .flaky { background: #fffbe6; }
.outcome { font-weight: 600; }
.note { color: #666; }
img { max-width: 100%; background: #fff; }
</style></head><body>
<h1>Matrix {{.Name}}{{if .Shard}} <span class="note">shard {{.Shard}}</span>{{end}}</h1>
<p><a href="/">all runs</a> · <a href="/matrix/">all matrices</a> · files: <a href="{{.Files}}matrix.json">matrix.json</a>, <a href="{{.Files}}junit.xml">junit.xml</a>, <a href="{{.Files}}summary.md">summary.md</a></p>
<p id="tally">{{if eq .Code 0}}Every cell met its expectation.{{else if eq .Code 1}}<strong>Expectations missed.</strong>{{else}}<strong>Incomplete: cells could not be run.</strong>{{end}} {{.Tally}}.</p>
<p><img id="heatmap" src="{{.Heatmap}}" alt="heat map of the violation rate per lock and nemesis set"></p>
<table id="cells">
<tr><th>cell</th><th>verdict</th><th>expected</th><th>outcome</th><th>headline / why</th></tr>
{{range .Rows}}<tr class="cell {{.Outcome}}">
<td>{{if .Report}}<a href="{{.Report}}">{{.ID}}</a>{{else}}{{.ID}}{{end}}</td><td>{{.Verdict}}</td>
<td>{{.Expect}}{{if .Reason}} <span class="note">({{.Reason}}{{if .Link}}, <a href="{{.Link}}">issue</a>{{end}})</span>{{end}}</td>
<td class="outcome">{{.Outcome}}</td><td>{{.Explain}}{{if and .Headline (ne .Outcome "missed")}}<br><span class="note">{{.Headline}}</span>{{end}}<br><code class="note">{{.Command}}</code></td></tr>
{{end}}</table>
</body></html>
`))

package htmlreport

import "html/template"

// emptyIcon keeps the browser from asking for /favicon.ico.
const emptyIcon = template.URL("data:,")

// page is the report. Its markup is also well-formed XML (every element
// closed, no named entities), which the tests check with encoding/xml.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"icon": func() template.URL { return emptyIcon },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<link rel="icon" href="{{icon}}"/>
<title>reactorlab report: {{.Spec}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; font-size: 14px; color: #222; margin: 0 auto; padding: 1em 2em 4em; max-width: 1180px; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.3em 0; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; border-bottom: 2px solid #ccd; padding-bottom: 0.15em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
code, .id { font-family: "Liberation Mono", Menlo, Consolas, monospace; font-size: 0.95em; overflow-wrap: anywhere; }
.notes { background: #fff4cc; border: 2px solid #e0b000; border-radius: 4px; padding: 0.5em 1em; margin: 1em 0; }
.notes h2 { border: 0; margin: 0.2em 0; font-size: 1.1em; }
.notes li { margin: 0.2em 0; }
.method { background: #f2f4f8; border-left: 4px solid #8a9bc0; padding: 0.5em 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.55em; vertical-align: top; }
th { background: #eef0f4; text-align: left; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { background: none; border: 0; padding-left: 0; }
table.facts td { border: 0; }
.sub { display: block; color: #555; font-size: 0.85em; }
.better { background: #d9f2d0; }
.worse { background: #f9d2cc; }
.different { background: #fcefc4; }
.inconclusive { color: #777; font-style: italic; }
tr.baseline td { background: #f4f4f4; }
.missing { color: #8a4b00; font-style: italic; }
.empty { color: #666; font-style: italic; }
.bad { color: #b00020; font-weight: 600; }
.figs { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; border: 1px solid #e3e3e3; padding: 6px; background: #fff; }
figure img { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #444; max-width: 500px; margin-top: 0.3em; }
figure.bar figcaption { max-width: 720px; }
details { margin: 0.5em 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
</style>
</head>
<body>
<h1>reactorlab report: <span class="id">{{.Spec}}</span></h1>
{{if .Notes}}<section id="notes" class="notes">
<h2>Read this first</h2>
<ul>{{range .Notes}}
<li>{{.}}</li>{{end}}
</ul>
</section>
{{end}}<section id="run">
<h2>The run</h2>
<table class="facts">
<tr><th>spec</th><td><span class="id">{{.Spec}}</span>{{if .Source}} from <code>{{.Source}}</code>{{end}}, {{.Repeats}} per cell</td></tr>
<tr><th>tool</th><td><code>{{.Tool}}</code>, built with {{.Go}}</td></tr>
<tr><th>placement</th><td><code>{{.Placement}}</code></td></tr>
<tr><th>mode</th><td>{{.Mode}}</td></tr>
<tr><th>runs</th><td{{if or (lt .RunsValid .RunsTotal) .RunsContended}} class="bad"{{end}}>{{.RunsValid}} of {{.RunsTotal}} valid{{if .RunsContended}}, {{.RunsContended}} of them contended (left out){{end}}</td></tr>
</table>
<table id="shards">
<tr><th>shard</th><th>host</th><th>kernel</th><th>CPU</th><th>CPUs</th><th>placement</th><th>mode</th><th>started (UTC)</th><th>wall time</th><th>valid runs</th></tr>{{range .Shards}}
<tr><td>{{.Shard}}{{if .Interrupted}} <span class="bad">interrupted</span>{{end}}</td><td>{{.Host}}</td><td>{{.Kernel}}</td><td>{{.CPU}}</td><td class="n">{{.CPUs}}</td><td><code>{{.Placement}}</code></td><td>{{.Mode}}</td><td>{{.Started}}</td><td class="n">{{.Wall}}</td><td class="n">{{.Runs}}</td></tr>{{end}}
</table>
{{if .Method}}<p class="method">{{.Method}}{{if .Alpha}} (alpha {{.Alpha}}){{end}}</p>{{end}}
</section>

<section id="summary">
<h2>Summary</h2>
<p>Baseline: median of its valid runs [min–max]. Other cells: the median of the ratios of each of its runs to the baseline run beside it [min–max], and the verdict of the rank test. Green is better, red worse, whatever the direction of the metric.</p>
<table id="summary-table">
<tr><th>cell</th><th>valid runs</th>{{range .Headline}}<th title="{{.Describe}}">{{.Label}}{{if .Unit}} <span class="sub">{{.Unit}}</span>{{end}}</th>{{end}}</tr>{{range .Summary}}
<tr{{if .Baseline}} class="baseline"{{end}}><td><span class="id">{{.ID}}</span>{{if .Describe}}<span class="sub">{{.Describe}}</span>{{end}}</td><td class="n{{if .BadRuns}} bad{{end}}">{{.Runs}}</td>{{range .Cells}}<td class="n {{.Class}}" title="{{.Title}}">{{.Text}}{{if .Range}}<span class="sub">{{.Range}}</span>{{end}}{{if .Verdict}}<span class="sub">{{.Verdict}}</span>{{end}}</td>{{end}}</tr>{{end}}
</table>
</section>

<section id="bars">
<h2>Throughput and control latency per cell</h2>
{{if .BarNote}}<p class="missing">{{.BarNote}}</p>{{end}}<div class="figs">{{range .Bars}}
<figure class="bar"><img class="plot" data-plot="{{.Kind}}" src="{{.Src}}" alt="{{.Alt}}"/><figcaption>{{.Caption}}</figcaption></figure>{{end}}
</div>
</section>

<section id="latency">
<h2>Latency distributions</h2>
<p>Each plot is a cell's latency percentile distribution: the x axis is the percentile on a log scale of 1/(1−q), so the tail gets room; the y axis is the latency, log scale.</p>{{range .Latency}}
<h3><span class="id">{{.ID}}</span>{{if .Describe}} <span class="sub">{{.Describe}}</span>{{end}}</h3>
{{if .Missing}}<p class="missing">{{.Missing}}</p>{{end}}{{if .Figures}}<div class="figs">{{range .Figures}}
<figure class="latency"><img class="plot" data-plot="latency" data-class="{{.Class}}" src="{{.Src}}" alt="{{.Alt}}"/><figcaption>{{.Caption}}</figcaption></figure>{{end}}
</div>{{end}}{{end}}
</section>

<section id="details">
<h2>Cell details</h2>{{range .Details}}
<h3><span class="id">{{.ID}}</span></h3>
<p>{{if .Describe}}{{.Describe}}. {{end}}{{if .Factor}}Factor <code>{{.Factor}}</code>. {{end}}{{.Runs}}.</p>
{{if .Invalid}}<ul class="bad">{{range .Invalid}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{if .Metrics}}<table class="metrics">
<tr><th>metric</th><th>unit</th><th>n</th><th>median</th><th>min–max</th>{{if (index .Metrics 0).Compared}}<th>baseline median</th><th>ratio</th><th>ratio min–max</th><th>pairs</th><th>p / adjusted p</th><th>verdict</th>{{end}}</tr>{{range .Metrics}}
<tr><td title="{{.Describe}}">{{.Label}}</td><td>{{.Unit}}</td><td class="n">{{.N}}</td><td class="n">{{.Median}}</td><td class="n">{{.Range}}</td>{{if .Compared}}<td class="n">{{.Base}}</td><td class="n {{.Class}}">{{.Ratio}}</td><td class="n">{{.RatioRange}}</td><td class="n">{{.Pairs}}</td><td class="n">{{.P}}</td><td class="{{.Class}}">{{.Verdict}}</td>{{end}}</tr>{{end}}
</table>
{{else}}<p class="empty">{{.NoMetrics}}</p>
{{end}}{{if .Latency}}<table class="classes">
<caption>in brackets, each percentile's 95% confidence interval from the order statistics</caption>
<tr><th>class</th><th>count</th><th>p50 µs</th><th>p90 µs</th><th>p99 µs</th><th>p99.9 µs</th><th>p99.99 µs</th><th>max µs</th><th>mean µs</th><th>clamped</th></tr>{{range .Latency}}
<tr><td><code>{{.Class}}</code></td><td class="n">{{.Count}}</td><td class="n">{{.P50}}</td><td class="n">{{.P90}}</td><td class="n">{{.P99}}</td><td class="n">{{.P999}}</td><td class="n">{{.P9999}}</td><td class="n">{{.Max}}</td><td class="n">{{.Mean}}</td><td class="n">{{.Clamped}}</td></tr>{{end}}
</table>
{{end}}{{if .LatencyNote}}<p class="empty">{{.LatencyNote}}</p>
{{end}}{{if .Config}}<details><summary>configuration</summary>
<table class="config">{{range .Config}}<tr><th>{{.K}}</th><td><code>{{.V}}</code></td></tr>{{end}}</table>
</details>
{{end}}{{end}}
</section>

{{if .SpecText}}<section id="spec">
<h2>Spec</h2>
<details><summary>the spec as given</summary>
<pre>{{.SpecText}}</pre>
</details>
</section>
{{end}}</body>
</html>
`))

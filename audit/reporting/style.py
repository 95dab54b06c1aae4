"""The report's stylesheet: one layout on screen and on paper (A4 or Letter). Tables wrap at word boundaries only
(never inside a word), numbers never wrap, headings stay with what follows them, small tables and rows are not split
across pages."""

#: width of the printed text block on A4 (210 mm − 2 × 14 mm margins); Letter's (8.5 in − 28 mm) is wider
PAGE_CONTENT_MM = 182
#: the report's papers (``--paper``, the dashboard's choice) → their CSS ``@page`` size; A4 by default
PAPERS = {"a4": "A4", "letter": "letter"}


def page_style(paper: str) -> str:
    """The ``@page`` rule that prints on ``paper`` (a key of :data:`PAPERS`)."""
    return f"@page{{size:{PAPERS[paper]}}}"


STYLE = """
@page{margin:12mm 14mm}
html{-webkit-print-color-adjust:exact;print-color-adjust:exact}
body{font-family:"DejaVu Sans",system-ui,sans-serif;max-width:182mm;margin:1.5rem auto;color:#222;line-height:1.4;
font-size:10.5pt;overflow-wrap:normal;word-break:normal;hyphens:manual}
h1{font-size:17pt;margin:0 0 .3rem}
h2{font-size:13.5pt;border-bottom:2px solid #4477AA;padding-bottom:.15rem;margin:1.2rem 0 .4rem}
h3{font-size:11.5pt;margin:1rem 0 .3rem}h4{font-size:10.5pt;margin:.8rem 0 .2rem}
h1,h2,h3,h4{break-after:avoid;page-break-after:avoid}
p,li{orphans:3;widows:3}
table{border-collapse:collapse;margin:.3rem 0 .8rem;font-size:8.5pt;max-width:100%}
table.small,tr,img,figure,.keep{break-inside:avoid;page-break-inside:avoid}
thead{display:table-header-group}
th,td{border:1px solid #ccc;padding:1px 4px;text-align:left;vertical-align:top}
th{background:#eef2f7;font-weight:600}
td.num,th.num{text-align:right;white-space:nowrap}
.code{font-family:"DejaVu Sans Mono",monospace;font-size:7.5pt;color:#555}
table.long{font-size:7.5pt}table.long td:first-child,table.matrix td:first-child{white-space:nowrap}
table.facts th{width:16%;white-space:nowrap}table.facts td{width:34%}
table.matrix{break-inside:auto;page-break-inside:auto}table.matrix th,table.matrix td{padding:1px 3px}table.matrix caption{caption-side:top;padding:0 0 2px}
td.v{text-align:center;white-space:nowrap;font-size:8pt}
.v-adverse{background:#f8d0d0}.v-no-evidence{background:#d6efd6}.v-inconclusive{background:#f1f1f1}
caption{caption-side:bottom;text-align:left;color:#666;font-size:8pt;padding-top:2px}
.verdict-line{font-weight:600;margin:.3rem 0}
.rule{border-left:3px solid #4477AA;padding:.2rem .6rem;background:#f6f8fb;break-inside:avoid}
pre{white-space:pre;overflow-wrap:normal;background:#f6f6f6;padding:.4rem;font-size:7.5pt;line-height:1.35;
break-inside:avoid}
pre.prompt{white-space:pre-wrap;font-size:8pt}
.figures{display:flex;flex-wrap:wrap;gap:2%}.figures img{width:49%}
img{max-width:100%}
.pagebreak{break-before:page;page-break-before:always}
.muted{color:#666;font-size:9pt}
table.ll144{width:100%;table-layout:fixed}table.ll144 th:first-child{width:24%}table.ll144 th:nth-child(4){width:22%}
table.verdicts td:last-child{font-size:7pt;min-width:30mm}
table.systems,table.adverse,table.wide{width:100%;margin-bottom:.4rem}.counts{color:#555;font-size:7.5pt}
p.quota{margin:.2rem 0}p.adverse-count{margin:.3rem 0 0}table.adverse caption{caption-side:top;padding:0 0 2px;color:#222;font-size:9pt}
table.sign-off{width:100%;border-collapse:collapse;margin-top:.4rem;font-size:10pt}
table.sign-off th,table.sign-off td{border:none;background:none;padding:.35rem 4px 1px;vertical-align:bottom}
table.sign-off th{width:17%;font-weight:600;white-space:nowrap}table.sign-off td{width:33%}
.blank{display:inline-block;width:95%;border-bottom:1px solid #222;height:1.1em}
.sign-off .scope{margin:.3rem 0;font-size:9pt}
table.trail td{overflow-wrap:anywhere}
@media print{body{margin:0;max-width:none}}
"""

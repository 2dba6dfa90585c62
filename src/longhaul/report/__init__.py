"""Reports: the USN figures and tables of a campaign, as one self-contained HTML page
(figures inline as SVG, so it opens offline) with each figure also as PNG and SVG."""

from longhaul.report.html import write_report

__all__ = ["write_report"]

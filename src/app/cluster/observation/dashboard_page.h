// The dashboard page the status server serves at / and /dashboard: one self-contained HTML
// document (CSS, JavaScript and the charts' SVG drawn by it; no external asset, so it works
// offline on an edge box) that polls /api/dashboard once a second and redraws without a reload.
//
// What a test can rely on (tests/integration/dashboard_browser_test.py): <body data-polls=N>
// counts successful polls; each job is a <tr class="job" data-job="ns/name">; its rounds are
// <tr class="round" data-round=R> under <section class="job-detail" data-job=...>; each eval
// metric is an <svg class="chart" data-kind="eval" data-metric=M> with one <circle class="pt new">
// (and "pt deployed") per evaluated round and one <g class="mark" data-decision=D> per decided
// round; each train metric (LL: per task, "task/accuracy") an <svg class="chart"
// data-kind="train"> with "pt train" points.
#pragma once

#include <string_view>

namespace sedna::app {

std::string_view DashboardPage();

}  // namespace sedna::app

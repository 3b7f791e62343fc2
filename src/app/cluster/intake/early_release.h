// How kept early reports are applied (early_reports.h, Apply): as a report for a known job that
// arrived now would be, behind the reports the report intake has not committed (the inbound
// queue's ordering contract: with reports pending the release is queued as an event, which the
// queue hands out once they are committed), and with the kept rows erased in the transaction that
// steps the job.
//
// Calls: the report intake (pending), the inbound queue (Defer), the job runner (PrepareReport,
//   CommitReports).
// Called by: the early reports (Apply), wired by the composition root.
#pragma once

#include "app/cluster/inbound_queue.h"
#include "app/cluster/intake/early_reports.h"
#include "app/cluster/intake/report_intake.h"
#include "app/cluster/jobs/job_runner.h"

namespace sedna::app {

EarlyReports::Apply ApplyEarlyReports(JobRunner& jobs, ReportIntake& intake, InboundQueue& inbound,
                                      EarlyReports& early);

}  // namespace sedna::app

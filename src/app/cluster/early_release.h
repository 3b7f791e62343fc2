// How kept early reports are applied (early_reports.h, Apply): as a report for a known job that
// arrived now would be, behind the reports the report intake has not committed (its ordering
// contract), and with the kept rows erased in the transaction that steps the job.
//
// Calls: the report intake (RunAfterReports), the job runner (PrepareReport, CommitReports).
// Called by: the early reports (Apply), wired by the composition root.
#pragma once

#include "app/cluster/early_reports.h"
#include "app/cluster/job_runner.h"
#include "app/cluster/report_intake.h"

namespace sedna::app {

EarlyReports::Apply ApplyEarlyReports(JobRunner& jobs, ReportIntake& intake, EarlyReports& early);

}  // namespace sedna::app

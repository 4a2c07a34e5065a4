// Unit tests for the Slurm launch's pure parts: Options -> SlurmJob, the OCI job's config.json,
// the answers of salloc and scontrol, and the command the step runs for --report.
#include "gpurun/slurm/slurm_launch.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/config/settings.hpp"
#include "slurm_oci.hpp"
#include "slurm_report.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::caught_error;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

TEST(SlurmSettings, BackendAndContainerTakeTheirWordsOnly) {
  Options o;
  find_setting("backend")->apply(json("slurm"), o);
  EXPECT_EQ(o.backend, Backend::slurm);
  EXPECT_THAT(caught_error([&] { find_setting("backend")->apply(json("cluster"), o); }).message,
              HasSubstr("backend \"cluster\": expected one of local, slurm"));
  find_setting("slurm_container")->apply(json("oci"), o);
  EXPECT_EQ(o.slurm.container, SlurmContainer::oci);
  EXPECT_THAT(caught_error([&] { find_setting("slurm_container")->apply(json("docker"), o); }).message,
              HasSubstr("expected one of pyxis, oci, none"));
}

TEST(SlurmJobFrom, CarriesTheLaunchOver) {
  Options o;
  o.backend = Backend::slurm;
  o.gpus = 2;
  o.image = "img";
  o.env = {"A=1"};
  o.volumes = {"/d:/d"};
  o.command = {"python", "t.py"};
  o.wait.enabled = true;
  o.slurm.partition = "p";
  o.slurm.srun_opts = {"--exclusive"};
  const SlurmJob job = slurm_job_from(o, 16, "/w", true);
  EXPECT_EQ(job.gpus, 2);
  EXPECT_EQ(job.cpus_per_gpu, 16);
  EXPECT_EQ(job.name, "gpurun");
  EXPECT_EQ(job.partition, "p");
  EXPECT_TRUE(job.queue);
  EXPECT_TRUE(job.pty);
  EXPECT_EQ(job.container, SlurmContainer::pyxis);
  EXPECT_EQ(job.workdir, "/w");
  EXPECT_THAT(job.extra, ElementsAre("--exclusive"));
  EXPECT_THAT(job.command, ElementsAre("python", "t.py"));
}

TEST(SlurmJobFrom, TheTimeLimitIsSlurmsTimeCappedByMaxRuntime) {
  Options o;
  o.backend = Backend::slurm;
  o.slurm.time_limit = "5";
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "5");  // slurm_time, as written
  o.time_limit = std::chrono::hours(8);
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "8:00:00");
  o.time_limit.reset();
  o.slurm.time_limit.clear();
  o.policy.max_runtime = std::chrono::hours(48);  // no limit asked: the site's
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "2-00:00:00");
  o.slurm.time_limit = "3-00:00:00";  // longer than max_runtime: the site's
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "2-00:00:00");
  o.time_limit = std::chrono::hours(72);
  EXPECT_THROW(slurm_job_from(o, 16, "/w", false), Refusal);
  o.time_limit.reset();
  o.slurm.time_limit = "1:00:00";  // shorter than max_runtime: the user's own stays
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "1:00:00");
  o.slurm.time_limit = "UNLIMITED";  // not comparable: the site's limit holds
  EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "2-00:00:00");
  for (const char* none : {"0", "0:0", "0-0"}) {  // Slurm's "no limit" in other words
    o.slurm.time_limit = none;
    EXPECT_EQ(slurm_job_from(o, 16, "/w", false).time_limit, "2-00:00:00") << none;
  }
}

// srun takes its last option: one given with --slurm-opt after gpurun's would lift the site's
// max_runtime or GPU count.
TEST(SlurmJobFrom, RefusesSrunOptionsThatSetWhatGpurunSets) {
  Options o;
  o.policy.max_runtime = std::chrono::hours(48);
  for (const char* opt :
       {"--time=7-0", "--time", "--tim=0", "-t", "-t0", "-lt10", "--gpus=8", "--gpus-per-n=8", "-G8", "--gres=gpu:8",
        "--gres=gpu:a100:8", "--cpus-per-gpu=64", "-c64", "--nodes=4", "-N4", "--tres-per-task=gres/gpu:2"}) {
    o.slurm.srun_opts = {"--exclusive", opt};
    EXPECT_THROW(slurm_job_from(o, 16, "/w", false), Refusal) << opt;
  }
  o.slurm.srun_opts = {"--gres", "gpu:8"};  // the value in the next item, as srun reads it
  EXPECT_THROW(slurm_job_from(o, 16, "/w", false), Refusal);
  o.slurm.srun_opts = {"--gres", "nvme:1"};
  EXPECT_NO_THROW(slurm_job_from(o, 16, "/w", false));
  o.slurm.srun_opts = {"--ntasks=4", "-n4"};  // tasks share the node's GPUs: no more of anything
  EXPECT_NO_THROW(slurm_job_from(o, 16, "/w", false));
  o.slurm.gres = true;  // but with slurm_gres the CPUs are per task: 4 tasks, 4 times the CPUs
  for (const char* opt : {"--ntasks=4", "-n4"}) {
    o.slurm.srun_opts = {opt};
    EXPECT_THROW(slurm_job_from(o, 16, "/w", false), Refusal) << opt;
  }
  o.slurm.gres = false;
  o.slurm.srun_opts = {"--time-limit-x"};  // no option of srun's this is a prefix of: srun says
  EXPECT_NO_THROW(slurm_job_from(o, 16, "/w", false));
  o.slurm.srun_opts = {"--gres=nvme:1", "--constraint=tesla", "--exclusive", "--mem=64G", "-l"};
  EXPECT_NO_THROW(slurm_job_from(o, 16, "/w", false));
  o.slurm.srun_opts = {"--time=1:00:00"};
  EXPECT_THAT(caught_error([&] { slurm_job_from(o, 16, "/w", false); }).message,
              HasSubstr("--slurm-opt --time=1:00:00: gpurun sets srun's --time itself; pass --time-limit"));
}

TEST(SlurmJobFrom, RefusesWhatSlurmCannotDo) {
  Options o;
  o.publish = {"6006:6006"};
  EXPECT_THAT(caught_error([&] { slurm_job_from(o, 16, "/w", false); }).message, HasSubstr("no port publishing"));
  o.publish = {};
  o.docker_opts = {"--ipc=host"};
  EXPECT_THAT(caught_error([&] { slurm_job_from(o, 16, "/w", false); }).message, HasSubstr("--slurm-opt"));
}

// One cache directory per image reference, and none for two: "a/my_img" and "a/my/img" were
// one ("a_my_img"), and the first unpacked was run for the other.
TEST(OciCacheKey, OneNameForEachReferenceAndNeverTheSameForTwo) {
  EXPECT_EQ(oci_cache_key("nvcr.io/nvidia/pytorch:24.05-py3"), "img-nvcr.io_2fnvidia_2fpytorch_3a24.05-py3");
  EXPECT_NE(oci_cache_key("a/my_img"), oci_cache_key("a/my/img"));
  EXPECT_NE(oci_cache_key("repo/img:v1"), oci_cache_key("repo/img_v1"));
  EXPECT_EQ(oci_cache_key(".."), "img-..");
  const std::string long_a = std::string(300, 'a') + "/x";
  const std::string long_b = std::string(300, 'a') + "/y";
  EXPECT_LE(oci_cache_key(long_a).size(), 200u);
  EXPECT_NE(oci_cache_key(long_a), oci_cache_key(long_b));
  EXPECT_EQ(oci_cache_key(long_a), oci_cache_key(long_a));
}

TEST(OciJobConfig, TheJobsVariablesAreInTheFileOverTheImages) {
  // Never on srun's command line, which `ps` shows everyone.
  const json image = {{"process", {{"env", {"PATH=/usr/bin", "HF_TOKEN=image", "LANG=C"}}}}};
  const json config = oci_job_config(image, {"/work", 0, 0, {}, {}, {"HF_TOKEN=secret", "MODE=oci"}});
  EXPECT_THAT(config["process"]["env"].get<std::vector<std::string>>(),
              ElementsAre("PATH=/usr/bin", "LANG=C", "HF_TOKEN=secret", "MODE=oci"));
}

TEST(OciJobConfig, WorkdirVolumesUserAndOnlyTheJobsGpus) {
  const json image = json::parse(R"({"process": {"cwd": "/", "user": {"uid": 0, "gid": 0}, "terminal": true},
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
    "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
  const json c = oci_job_config(image, {"/home/ada/p", 1000, 100, {"/data:/in:ro"}, {5, 7}, {}});
  EXPECT_EQ(c["process"]["cwd"], "/home/ada/p");
  EXPECT_EQ(c["process"]["user"], json::parse(R"({"uid": 1000, "gid": 100})"));
  EXPECT_EQ(c["process"]["terminal"], false);
  ASSERT_EQ(c["mounts"].size(), 3U);
  EXPECT_EQ(c["mounts"][1], json::parse(R"({"destination": "/home/ada/p", "type": "bind", "source": "/home/ada/p",
                                           "options": ["rbind", "rw"]})"));
  EXPECT_EQ(c["mounts"][2], json::parse(R"({"destination": "/in", "type": "bind", "source": "/data",
                                           "options": ["rbind", "ro"]})"));
  std::vector<std::string> paths;
  for (const auto& d : c["linux"]["devices"]) paths.push_back(d["path"]);
  // The control devices are added only where this machine has them.
  ASSERT_GE(paths.size(), 2U);
  EXPECT_EQ(paths[0], "/dev/nvidia5");
  EXPECT_EQ(paths[1], "/dev/nvidia7");
  EXPECT_EQ(c["linux"]["resources"]["devices"][0], json::parse(R"({"allow": false, "access": "rwm"})"));
  EXPECT_EQ(c["linux"]["resources"]["devices"][1]["allow"], true);
  EXPECT_THAT(caught_error([&] {
                oci_job_config(image, {"/w", 0, 0, {"named:/x"}, {0}, {}});
              }).message,
              HasSubstr("no named Docker volumes"));
}

TEST(SlurmAnswers, SallocScontrolAndSkopeo) {
  EXPECT_EQ(parse_salloc_job_id("salloc: Granted job allocation 42\n"), "42");
  EXPECT_THAT(caught_error([] { parse_salloc_job_id("salloc: error: busy\n"); }).message, HasSubstr("did not say"));
  EXPECT_THAT(scontrol_gpu_indices("JOB_GRES=gpu:3\n     Nodes=n1 CPU_IDs=0-31 Mem=0 GRES=gpu:a100:3(IDX:0,2-3)\n"),
              ElementsAre(0, 2, 3));
  EXPECT_TRUE(scontrol_gpu_indices("JOB_GRES=(null)\n   Nodes=n1 GRES=\n").empty());
  EXPECT_EQ(skopeo_source("nvcr.io/nvidia/pytorch:24.05-py3"), "docker://nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(skopeo_source("oci:/images/bb:1"), "oci:/images/bb:1");
  EXPECT_EQ(skopeo_source("docker-archive:/tmp/x.tar"), "docker-archive:/tmp/x.tar");
}

TEST(SlurmReport, TheStepRunsGpurunItself) {
  Options o;
  o.nvidia_smi = "/usr/bin/nvidia-smi";
  o.report_interval_s = 0.5;
  o.report_json = "/tmp/r.json";
  o.command = {"2", "t.py"};  // a program named 2
  o.gpus = 3;
  EXPECT_THAT(report_step_command(o, "/opt/gpurun", o.command),
              ElementsAre("/usr/bin/env", "GPURUN_SLURM_REPORT_STEP=1", "/opt/gpurun", "--no-config", "--backend",
                          "slurm", "--slurm-container", "none", "--report", "--nvidia-smi", "/usr/bin/nvidia-smi",
                          "--report-interval", "0.5", "--report-threshold", "80", "--gpu-source", "auto",
                          "--report-json", "/tmp/r.json", "3", "--", "2", "t.py"));
}

// In a step of one's own (`srun --pty bash`: SLURM_JOB_ID and SLURM_STEP_ID set), a --report
// launch ran its command there and then, without its image, GPU count or time limit: only the
// step the outer gpurun starts is the inner gpurun's.
TEST(SlurmReport, OnlyTheStepGpurunStartsIsTheInnerGpurun) {
  const test::EnvGuard job("SLURM_JOB_ID", "77");
  const test::EnvGuard step("SLURM_STEP_ID", "0");
  {
    const test::EnvGuard unmarked(kReportStepVariable, std::nullopt);
    EXPECT_FALSE(inside_report_step());
  }
  const test::EnvGuard marked(kReportStepVariable, "1");
  EXPECT_TRUE(inside_report_step());
  const test::EnvGuard no_step("SLURM_STEP_ID", std::nullopt);
  EXPECT_FALSE(inside_report_step());
}

TEST(SlurmOci, DetachedTheBatchScriptRunsGpurunOnTheNode) {
  Options o;
  o.image = "oci:/images/bb:1";
  o.slurm.oci_cache = "/shared/oci";
  o.gpus = 2;
  o.env = {"MODE=oci", "HOME"};
  o.volumes = {"/data:/data:ro"};
  o.command = {"sh", "-c", "echo hi"};
  o.detach = true;
  o.slurm.container = SlurmContainer::oci;
  const SlurmJob job = oci_batch_job(o, slurm_job_from(o, 16, "/w", false), "/opt/gpurun");
  EXPECT_TRUE(job.batch_runs_command);
  EXPECT_EQ(job.container, SlurmContainer::none);
  EXPECT_TRUE(job.volumes.empty());
  EXPECT_THAT(job.env, ElementsAre("MODE=oci", "HOME"));  // sbatch carries the values
  EXPECT_THAT(job.command,
              ElementsAre("/opt/gpurun", "--no-config", "--backend", "slurm", "--slurm-container", "oci", "--image",
                          "oci:/images/bb:1", "--cpus-per-gpu", "16", "--slurm-oci-cache", "/shared/oci", "--env",
                          "MODE", "--env", "HOME", "--volume", "/data:/data:ro", "2", "--", "sh", "-c", "echo hi"));
  o.report = true;  // the node's gpurun makes the report, into the job's output
  o.nvidia_smi = "/usr/bin/nvidia-smi";
  o.report_interval_s = 0.5;
  EXPECT_THAT(oci_batch_job(o, slurm_job_from(o, 16, "/w", false), "/opt/gpurun").command,
              ElementsAre("/opt/gpurun", "--no-config", "--backend", "slurm", "--slurm-container", "oci", "--image",
                          "oci:/images/bb:1", "--cpus-per-gpu", "16", "--slurm-oci-cache", "/shared/oci", "--env",
                          "MODE", "--env", "HOME", "--volume", "/data:/data:ro", "--report", "--nvidia-smi",
                          "/usr/bin/nvidia-smi", "--report-interval", "0.5", "--report-threshold", "80", "--gpu-source",
                          "auto", "2", "--", "sh", "-c", "echo hi"));
  o.volumes = {"cache:/cache"};
  EXPECT_THAT(caught_error([&] { oci_batch_job(o, slurm_job_from(o, 16, "/w", false), "/opt/gpurun"); }).message,
              HasSubstr("no named Docker volumes"));
  o.image.clear();
  EXPECT_THAT(caught_error([&] { oci_batch_job(o, slurm_job_from(o, 16, "/w", false), "/opt/gpurun"); }).message,
              HasSubstr("needs an image"));
}

}  // namespace
}  // namespace gpurun

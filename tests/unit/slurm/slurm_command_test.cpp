// Unit tests for the srun/sbatch argv of the Slurm backend: whole vectors are asserted.
#include "gpurun/slurm/slurm_command.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpurun/util/shell_quote.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using test::caught_error;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

SlurmJob plain_job() {
  SlurmJob job;
  job.gpus = 2;
  job.cpus_per_gpu = 16;
  job.name = "gpurun";
  job.workdir = "/home/ada/proj";
  job.command = {"python", "train.py"};
  return job;
}

TEST(SlurmDuration, WritesHoursOrDaysAsSlurmsTimeDoes) {
  EXPECT_EQ(slurm_duration(std::chrono::hours(8)), "8:00:00");
  EXPECT_EQ(slurm_duration(std::chrono::seconds(90)), "0:01:30");
  EXPECT_EQ(slurm_duration(std::chrono::hours(49) + std::chrono::minutes(5)), "2-01:05:00");
}

TEST(SlurmDuration, ReadsEveryFormOfSlurmsTimeAndNothingElse) {
  using std::chrono::seconds;
  EXPECT_EQ(parse_slurm_duration("30"), seconds(1800));
  EXPECT_EQ(parse_slurm_duration("30:15"), seconds(1815));
  EXPECT_EQ(parse_slurm_duration("4:00:00"), seconds(4 * 3600));
  EXPECT_EQ(parse_slurm_duration("2-12"), seconds(2 * 86400 + 12 * 3600));
  EXPECT_EQ(parse_slurm_duration("2-12:30"), seconds(2 * 86400 + 12 * 3600 + 30 * 60));
  EXPECT_EQ(parse_slurm_duration("1-00:00:01"), seconds(86401));
  for (const char* other : {"", "UNLIMITED", "infinite", "1:2:3:4", "-5", "1-", "a:b", "99999999999999"})
    EXPECT_FALSE(parse_slurm_duration(other)) << other;
}

TEST(SrunArgv, PlainJobFailsAtOnceWithoutWait) {
  EXPECT_THAT(build_srun_argv(plain_job()), ElementsAre("srun", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                                                        "--job-name=gpurun", "--immediate", "python", "train.py"));
}

TEST(SrunArgv, WaitQueuesAndALimitBecomesImmediateSeconds) {
  SlurmJob job = plain_job();
  job.queue = true;
  EXPECT_THAT(build_srun_argv(job), ElementsAre("srun", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                                                "--job-name=gpurun", "python", "train.py"));
  job.queue_limit = std::chrono::seconds(1800);
  EXPECT_THAT(build_srun_argv(job), ElementsAre("srun", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                                                "--job-name=gpurun", "--immediate=1800", "python", "train.py"));
}

TEST(SrunArgv, SiteSettingsGresPtyAndExtraOptions) {
  SlurmJob job = plain_job();
  job.gres = true;
  job.partition = "h100";
  job.account = "lab";
  job.time_limit = "4:00:00";
  job.qos = "high";
  job.pty = true;
  job.queue = true;
  job.extra = {"--constraint=nvlink"};
  EXPECT_THAT(build_srun_argv(job),
              ElementsAre("srun", "--nodes=1", "--gres=gpu:2", "--cpus-per-task=32", "--job-name=gpurun",
                          "--partition=h100", "--account=lab", "--time=4:00:00", "--qos=high", "--pty",
                          "--constraint=nvlink", "python", "train.py"));
}

TEST(SrunArgv, EnvironmentGoesInFrontAndPyxisNamesIt) {
  SlurmJob job = plain_job();
  job.container = SlurmContainer::pyxis;
  job.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  job.env = {"WANDB_MODE=offline", "HF_TOKEN", "LIST=a,b"};
  job.volumes = {"/data:/data:ro", "/scratch"};
  EXPECT_THAT(build_srun_argv(job),
              ElementsAre("env", "WANDB_MODE=offline", "LIST=a,b", "srun", "--nodes=1", "--gpus-per-node=2",
                          "--cpus-per-gpu=16", "--job-name=gpurun", "--immediate",
                          "--container-image=nvcr.io#nvidia/pytorch:24.05-py3",
                          "--container-mounts=/home/ada/proj:/home/ada/proj,/data:/data:ro,/scratch:/scratch",
                          "--container-workdir=/home/ada/proj", "--container-env=WANDB_MODE,HF_TOKEN,LIST", "python",
                          "train.py"));
}

TEST(SrunArgv, OciRunsTheBundle) {
  SlurmJob job = plain_job();
  job.container = SlurmContainer::oci;
  job.oci_bundle = "/home/ada/.cache/gpurun/oci/abc";
  EXPECT_THAT(build_srun_argv(job),
              ElementsAre("srun", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16", "--job-name=gpurun",
                          "--immediate", "--container=/home/ada/.cache/gpurun/oci/abc", "python", "train.py"));
}

TEST(SrunArgv, AnOverlappingStepAndTheStepItStarts) {
  SlurmJob job = plain_job();
  job.overlap = true;
  EXPECT_THAT(build_srun_argv(job), ElementsAre("srun", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                                                "--job-name=gpurun", "--immediate", "--overlap", "python", "train.py"));
  job.overlap = false;  // the container step the overlapping one starts
  job.container = SlurmContainer::pyxis;
  job.image = "busybox";
  job.env = {"A=1"};
  EXPECT_THAT(build_step_argv(job),
              ElementsAre("srun", "--container-image=busybox", "--container-mounts=/home/ada/proj:/home/ada/proj",
                          "--container-workdir=/home/ada/proj", "--container-env=A", "python", "train.py"));
  // From a terminal, the container step gets one too: an interactive shell in the container has a tty.
  job.pty = true;
  job.overlap = true;
  EXPECT_THAT(build_step_argv(job),
              ElementsAre("srun", "--pty", "--overlap", "--container-image=busybox",
                          "--container-mounts=/home/ada/proj:/home/ada/proj", "--container-workdir=/home/ada/proj",
                          "--container-env=A", "python", "train.py"));
}

TEST(SallocArgv, TheAllocationAloneWithTheQueueAndSiteOptions) {
  SlurmJob job = plain_job();
  job.pty = true;
  job.queue = true;
  job.queue_limit = std::chrono::seconds(90);
  job.extra = {"--exclusive"};
  EXPECT_THAT(build_salloc_argv(job),
              ElementsAre("salloc", "--no-shell", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                          "--job-name=gpurun", "--immediate=90", "--exclusive"));
  job.command = {};
  EXPECT_THAT(caught_error([&] { build_salloc_argv(job); }).message, HasSubstr("no command"));
}

TEST(SrunArgv, WhatCannotBeMappedIsRefused) {
  SlurmJob job = plain_job();
  job.volumes = {"/data:/data"};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("slurm_container none"));
  job.container = SlurmContainer::pyxis;
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("needs an image"));
  job.image = "busybox";
  job.volumes = {"cache:/cache"};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("no named Docker volumes"));
  job.volumes = {"/a,b:/c"};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("holds a ','"));
  job.volumes = {"/a:/b:z"};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("not \"z\""));
  job.volumes = {};
  job.env = {"1BAD=x"};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("not a variable name"));
  // Set on srun itself: none that changes srun (a .gpurun.json's env reaches it as a flag's does).
  for (const char* item : {"LD_PRELOAD=/repo/hook.so", "SLURM_TASK_PROLOG=./p.sh", "SLURM_GPUS=8", "PATH=./bin",
                           "SBATCH_EXCLUSIVE=1", "GCONV_PATH=."}) {
    job.env = {item};
    EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message,
                HasSubstr("the job's variables are set on srun itself"))
        << item;
  }
  job.env = {"SLURM_JOB_ID"};  // a bare name: srun has it already, and pyxis passes it in
  EXPECT_NO_THROW(build_srun_argv(job));
  job.env = {};
  job.command = {};
  EXPECT_THAT(caught_error([&] { build_srun_argv(job); }).message, HasSubstr("no command"));
}

TEST(SbatchArgv, WrapsTheStepShellQuotedSoTheShellGivesSrunTheSameArgv) {
  SlurmJob job = plain_job();
  job.queue = true;
  job.command = {"sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\" it's"};
  const auto argv = build_sbatch_argv(job);
  EXPECT_THAT(argv, ElementsAre("sbatch", "--parsable", "--nodes=1", "--gpus-per-node=2", "--cpus-per-gpu=16",
                                "--job-name=gpurun", "--output=/home/ada/proj/gpurun-%j.out",
                                "--wrap=" + shell_join({"srun", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\" it's"})));
  EXPECT_EQ(argv.back(), R"(--wrap=srun sh -c 'echo "$CUDA_VISIBLE_DEVICES" it'\''s')");
}

TEST(SbatchArgv, AScriptThatStartsItsOwnStepsRunsTheCommandItself) {
  SlurmJob job = plain_job();
  job.batch_runs_command = true;
  job.command = {"/opt/gpurun", "--image", "a b", "2", "--", "python", "train.py"};
  EXPECT_EQ(build_sbatch_argv(job).back(), "--wrap=/opt/gpurun --image 'a b' 2 -- python train.py");
  job.batch_runs_command = false;
  job.overlap = true;  // the step starts a step of its own (--report in a container)
  EXPECT_EQ(build_sbatch_argv(job).back(), "--wrap=srun --overlap /opt/gpurun --image 'a b' 2 -- python train.py");
}

TEST(SbatchArgv, AWaitLimitIsRefused) {
  SlurmJob job = plain_job();
  job.queue = true;
  job.queue_limit = std::chrono::seconds(60);
  EXPECT_THAT(caught_error([&] { build_sbatch_argv(job); }).message, HasSubstr("sbatch has no --immediate"));
}

TEST(PyxisImage, RegistryIsSeparatedByHash) {
  EXPECT_EQ(pyxis_image("nvcr.io/nvidia/pytorch:24.05-py3"), "nvcr.io#nvidia/pytorch:24.05-py3");
  EXPECT_EQ(pyxis_image("localhost:5000/me/x"), "localhost:5000#me/x");
  EXPECT_EQ(pyxis_image("localhost/x"), "localhost#x");
  EXPECT_EQ(pyxis_image("pytorch/pytorch:latest"), "pytorch/pytorch:latest");  // Docker Hub
  EXPECT_EQ(pyxis_image("ubuntu"), "ubuntu");
  EXPECT_EQ(pyxis_image("/images/pytorch.sqsh"), "/images/pytorch.sqsh");
  EXPECT_EQ(pyxis_image("nvcr.io#nvidia/pytorch"), "nvcr.io#nvidia/pytorch");
}

TEST(SbatchJobId, ParsableAnswer) {
  EXPECT_EQ(parse_sbatch_job_id("1234\n"), "1234");
  EXPECT_EQ(parse_sbatch_job_id("77;cluster2\n"), "77");
  EXPECT_THAT(caught_error([] { parse_sbatch_job_id("Submitted batch job 5\n"); }).message, HasSubstr("not a job id"));
}

}  // namespace
}  // namespace gpurun

// The rules for a caller under sudo (gpurun/config/sudo_rules.hpp, gpurun/config/caller.hpp): who the caller
// is, root-only settings, the docker option allowlist in every spelling docker accepts.
#include "gpurun/config/sudo_rules.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "gpurun/config/caller.hpp"
#include "gpurun/config/config.hpp"
#include "gpurun/config/options.hpp"
#include "gpurun/config/policy.hpp"
#include "support/test_support.hpp"

namespace gpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Options caller_options(std::vector<std::string> docker_opts) {
  Options o;
  Caller& alice = o.caller.emplace();  // (assigning a Caller{...} trips g++ 12's -Wmaybe-uninitialized at -O3)
  alice.ids.uid = 1000;
  alice.ids.gid = 1000;
  alice.ids.groups = {1000};
  alice.login = "alice";
  alice.home = "/home/alice";
  o.docker_opts = std::move(docker_opts);
  return o;
}

std::string refusal(std::vector<std::string> docker_opts) {
  const auto e = test::caught_error([&] { enforce_caller_rules(caller_options(std::move(docker_opts)), false); });
  EXPECT_EQ(e.exit_code, 125);
  return e.message;
}

TEST(SudoCaller, OnlyRootWithSudoUidOfAnotherUserActsForACaller) {
  const char* with_root[] = {"SUDO_UID=0", "SUDO_GID=0", "SUDO_USER=root", nullptr};
  const char* with_user[] = {"SUDO_UID=0", nullptr};
  const std::string no_proc = "/nonexistent/proc";  // no sudo above, no login uid: this host's say nothing
  EXPECT_FALSE(sudo_caller(0, with_root, no_proc, 1));
  EXPECT_FALSE(sudo_caller(1000, with_root, no_proc, 1));  // not root: nothing to act for
  const char* none[] = {"HOME=/root", nullptr};
  EXPECT_FALSE(sudo_caller(0, none, no_proc, 1));
  EXPECT_FALSE(sudo_caller(0, with_user, no_proc, 1));
  const char* bad[] = {"SUDO_UID=12x", "SUDO_GID=5", nullptr};
  EXPECT_THAT(test::caught_error([&] { sudo_caller(0, bad, no_proc, 1); }).message, HasSubstr("SUDO_UID is \"12x\""));
}

// A sudoers rule with SETENV lets a caller set SUDO_UID and SUDO_GID on sudo's command line:
// `sudo SUDO_UID=0 gpurun` was root's launch. They are believed as the sudo that started gpurun
// knows its user (its real uid; under use_pty its monitor's too), else as the session's login.
TEST(SudoCaller, SudoUidAndGidAreBelievedOnlyAsTheSudoAboveOrTheLoginKnowsThem) {
  const test::TempDir proc;
  const auto process = [&](long pid, const char* name, long ppid, unsigned uid) {
    std::filesystem::create_directories(proc / std::to_string(pid));
    std::ofstream(proc / (std::to_string(pid) + "/status"))
        << "Name:\t" << name << "\nPPid:\t" << ppid << "\nUid:\t" << uid << "\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
  };
  process(100, "bash", 1, 65534);
  process(200, "sudo", 100, 65534);  // nobody ran sudo
  process(201, "sudo", 200, 65534);  // its monitor, under use_pty
  const char* as_nobody[] = {"SUDO_UID=65534", "SUDO_GID=65534", nullptr};
  const auto nobody = sudo_caller(0, as_nobody, proc.str(), 201);
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->ids.uid, 65534U);
  const char* as_root[] = {"SUDO_UID=0", "SUDO_GID=0", nullptr};
  EXPECT_THAT(test::caught_error([&] { sudo_caller(0, as_root, proc.str(), 201); }).message,
              HasSubstr("SUDO_UID 0 is not who ran sudo (uid 65534)"));
  const char* root_group[] = {"SUDO_UID=65534", "SUDO_GID=0", nullptr};
  EXPECT_THAT(test::caught_error([&] { sudo_caller(0, root_group, proc.str(), 201); }).message,
              HasSubstr("SUDO_GID 0 is not a group of nobody"));

  // A sudo further up is not who started gpurun (an admin's earlier `sudo -iu nobody`, then a root
  // shell): only the parent, or the parent's parent under use_pty, counts.
  process(300, "bash", 201, 0);
  EXPECT_FALSE(sudo_invoker(300, proc.str()));
  EXPECT_EQ(sudo_invoker(201, proc.str()), std::optional<uid_t>(65534));

  // No sudo above (`sudo -b`, a root shell of `sudo -i`): the session's login uid decides.
  std::filesystem::create_directories(proc / "self");
  std::ofstream(proc / "self/loginuid") << "65534";
  EXPECT_THAT(test::caught_error([&] { sudo_caller(0, as_root, proc.str(), 100); }).message,
              HasSubstr("SUDO_UID 0 is not this session's user (uid 65534"));
  EXPECT_TRUE(sudo_caller(0, as_nobody, proc.str(), 100));
  std::ofstream(proc / "self/loginuid") << "4294967295";  // no login: no say
  EXPECT_FALSE(sudo_caller(0, as_root, proc.str(), 100));
}

TEST(SudoCaller, TheCallersConfigIsInTheirHomeNotRoots) {
  const Caller c{{1000, 1000, {}}, "alice", "/home/alice"};
  EXPECT_EQ(caller_config_path(c), "/home/alice/.config/gpurun/config.json");
}

TEST(SudoRules, RootOnlySettingsComeFromTheSystemFileOnly) {
  const Setting& docker = *find_setting("docker");
  const std::string sys = "/etc/gpurun/config.json";
  check_root_only(docker, {ConfigSource::Kind::system, sys, 2, {}}, sys);
  check_root_only(docker, {ConfigSource::Kind::profile, sys, 4, "p"}, sys);
  for (const auto kind : {ConfigSource::Kind::user, ConfigSource::Kind::project, ConfigSource::Kind::extra_file,
                          ConfigSource::Kind::environment, ConfigSource::Kind::flag}) {
    const auto e = test::caught_error([&] { check_root_only(docker, {kind, "x", 0, {}}, sys); });
    EXPECT_THAT(e.message, HasSubstr("not allowed under sudo: ")) << kind_name(kind);
    EXPECT_EQ(e.exit_code, 125);
  }
  for (const char* key : {"nvidia_smi", "lock_dir", "nvml_library"}) EXPECT_TRUE(find_setting(key)->root_only) << key;
  // Whatever names a program, a library or a socket gpurun uses is the admin's to choose.
  for (const Setting& s : settings())
    if (s.program) {
      EXPECT_TRUE(s.root_only) << s.key;
    }
  check_root_only(*find_setting("image"), {ConfigSource::Kind::flag, "--image", 0, {}}, sys);  // not root-only
}

TEST(SudoRules, LoadConfigRefusesAFlagSettingDockerUnderSudo) {
  test::TempDir dir;
  ConfigInputs in;
  in.system_file = dir / "none.json";
  in.caller = Caller{{1000, 1000, {}}, "alice", dir.str()};
  in.flags = {{"docker", "/bin/sh"}};
  const auto e = test::caught_error([&] { load_config(in); });
  EXPECT_EQ(e.message,
            "not allowed under sudo: flag --docker sets \"docker\"; under sudo it comes only from the "
            "system file " +
                dir / "none.json" + ", which the admin writes");
}

// Under sudo the system file chooses the programs root runs: one that others may write, or
// replace in a directory they may write (a group-writable /etc/gpurun), is refused, with the fix.
TEST(SudoRules, ASystemFileOthersMayWriteOrReplaceIsRefusedUnderSudo) {
  test::TempDir dir;
  const std::string etc = dir / "etc";
  std::filesystem::create_directories(etc);
  std::filesystem::permissions(etc, std::filesystem::perms(0755));
  const std::string system = etc + "/config.json";
  test::write_file(system, R"({"docker": "/usr/bin/docker"})");
  std::filesystem::permissions(system, std::filesystem::perms(0664));
  ConfigInputs in;
  in.system_file = system;
  in.caller = Caller{{1000, 1000, {}}, "alice", dir.str()};
  EXPECT_THAT(test::caught_error([&] { load_config(in); }).message,
              HasSubstr("the system file " + system + " is not root's alone (it is uid " + std::to_string(::geteuid()) +
                        "'s with mode 0664)"));
  EXPECT_THAT(test::caught_error([&] { load_config(in); }).message, HasSubstr("sudo chmod 644 " + system));
  ConfigInputs plain = in;  // without sudo nobody gains: read as before
  plain.caller.reset();
  EXPECT_NO_THROW(load_config(plain));

  std::filesystem::permissions(system, std::filesystem::perms(0644));
  EXPECT_NO_THROW(load_config(in));
  std::filesystem::permissions(etc, std::filesystem::perms(0775));
  EXPECT_THAT(test::caught_error([&] { load_config(in); }).message,
              HasSubstr("its directory " + etc + " is uid " + std::to_string(::geteuid()) + "'s with mode 0775"));
  std::filesystem::permissions(etc, std::filesystem::perms(01777));  // sticky: nobody else may replace it
  EXPECT_NO_THROW(load_config(in));

  // A link into a share others may write: the file there is root's 644, but anyone of the group
  // may put another in its place.
  std::filesystem::permissions(etc, std::filesystem::perms(0755));
  const std::string share = dir / "share";
  std::filesystem::create_directories(share);
  std::filesystem::permissions(share, std::filesystem::perms(0775));
  std::filesystem::rename(system, share + "/gpurun.json");
  std::filesystem::create_symlink(share + "/gpurun.json", system);
  EXPECT_THAT(test::caught_error([&] { load_config(in); }).message,
              HasSubstr("its directory " + share + " is uid " + std::to_string(::geteuid()) + "'s with mode 0775"));
  // gpurund as root reads it under the same rule, with no caller.
  ConfigInputs service = plain;
  service.root_runs_what_it_names = true;
  EXPECT_THAT(test::caught_error([&] { load_config(service); }).message, HasSubstr("is not root's alone"));
  std::filesystem::permissions(share, std::filesystem::perms(0755));
  EXPECT_NO_THROW(load_config(service));
}

TEST(SudoRules, EverySpellingOfARefusedOptionIsRefusedNamingIt) {
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"--privileged"},
                                             {"--privileged=true"},
                                             {"-it", "--privileged"},
                                             {"--pid=host"},
                                             {"--pid", "host"},
                                             {"--cidfile=/etc/x"},
                                             {"--cidfile", "/etc/x"},
                                             {"--user", "0"},
                                             {"-u0"},
                                             {"-u", "0"},
                                             {"-u=0"},
                                             {"-itu0"},
                                             {"--cap-add=SYS_ADMIN"},
                                             {"--device", "/dev/nvidia3"},
                                             {"--gpus=all"},
                                             {"--runtime=nvidia"},
                                             {"--volumes-from", "bob_job"},
                                             {"--network=host"},
                                             {"--net=host"},
                                             {"--ipc=host"},
                                             {"--ipc", "container:x"},
                                             {"--env-file", "/etc/shadow"},
                                             {"-d"},
                                             {"--restart=always"},
                                             {"--security-opt", "seccomp=unconfined"},
                                             {"--label", "gpurun.user=bob"},
                                             {"--rm=false"},
                                             {"--mount", "type=volume,src=shared,dst=/d"},
                                             {"--mount", "src=/x,dst=/y"},
                                             {"--mount", "\"type=bind\",src=/x,dst=/y"},
                                             {"--pids-limit=-1"},
                                             {"--pids-limit", "0"},
                                             {"--pids-limit=lots"}}) {
    const std::string message = refusal(words);
    EXPECT_THAT(message, HasSubstr("not allowed under sudo: ")) << words.front();
  }
}

TEST(SudoRules, WordsDockerWouldTakeForTheImageAreRefused) {
  EXPECT_THAT(refusal({"alpine"}), HasSubstr("not a docker option"));
  EXPECT_THAT(refusal({"--"}), HasSubstr("not a docker option"));
  EXPECT_THAT(refusal({"--env"}), HasSubstr("needs a value"));
  EXPECT_THAT(refusal({"-e"}), HasSubstr("needs a value"));
}

TEST(SudoRules, WhatATrainingJobNeedsPasses) {
  enforce_caller_rules(caller_options({"--shm-size=8g",
                                       "--ipc=private",
                                       "-e",
                                       "A=1",
                                       "--workdir",
                                       "/w",
                                       "--entrypoint=",
                                       "--init",
                                       "-it",
                                       "--mount",
                                       "type=tmpfs,dst=/scratch",
                                       "--network",
                                       "none",
                                       "--label",
                                       "team=ml",
                                       "--cap-drop=ALL",
                                       "--security-opt=no-new-privileges",
                                       "-p",
                                       "8080:80",
                                       "--mount",
                                       "dst=/d,type=bind,src=/data"}),
                       false);
}

TEST(SudoRules, TheAdminsAllowListExtendsTheBuiltInOne) {
  Options o = caller_options({"--ulimit", "nofile=1024"});
  EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message, HasSubstr("--ulimit"));
  o.policy.allowed_docker_options = {"--ulimit"};
  enforce_caller_rules(o, false);
}

// An admin who allows one capability allows that one: --cap-add ALL, which a refusal counts as
// every capability, is no capability an allowance names.
TEST(SudoRules, AnAllowedCapabilityLetsNoAllThrough) {
  Options all = caller_options({"--cap-add=ALL"});
  all.policy.allowed_docker_options = {"--cap-add=NET_ADMIN"};
  EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(all, false); }).message, HasSubstr("--cap-add"));
  Options one = caller_options({"--cap-add", "net_admin"});
  one.policy.allowed_docker_options = {"--cap-add=NET_ADMIN"};
  enforce_caller_rules(one, false);
}

// Whose the container is stays gpurun's to say, whatever the admin allows: a bare "--label" on
// the site's list matches every value, and a label file is read by root unchecked.
TEST(SudoRules, GpurunsOwnLabelsAreRefusedEvenWhereTheAdminAllowsLabels) {
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"--label", "gpurun.user=bob"},
                                             {"--label=gpurun.uid=1001"},
                                             {"-l", " gpurun.user=bob"},
                                             {"--label", "\tgpurun.time-limit=1"},
                                             {"--label", "\vgpurun.notify=run_ended"},
                                             {"--label", "\u00a0gpurun.user=bob"},
                                             {"--label-file", "/home/alice/labels"}}) {
    Options o = caller_options(words);
    o.policy.allowed_docker_options = {"--label", "--label-file", words.front() + "=" + words.back()};
    const std::string message = test::caught_error([&] { enforce_caller_rules(o, false); }).message;
    EXPECT_THAT(message, HasSubstr("not allowed under sudo: ")) << words.back();
    EXPECT_THAT(message, Not(HasSubstr("the admin may allow it"))) << words.back();
  }
  // The labels tools running as root act on: podman's auto-update restarts the unit named.
  for (const char* label : {"io.containers.autoupdate=registry", "PODMAN_SYSTEMD_UNIT=reboot.target",
                            "traefik.http.routers.x.rule=Host(`x`)", "com.centurylinklabs.watchtower.enable=true"}) {
    Options o = caller_options({"--label", label});
    o.policy.allowed_docker_options = {"--label"};
    EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message,
                HasSubstr("not allowed under sudo: "))
        << label;
  }
  Options team = caller_options({"--label", "team=ml"});
  team.policy.allowed_docker_options = {"--label"};
  enforce_caller_rules(team, false);
}

// podman reads "TRANSPORT:PATH" as an image source, which root would open and unpack into the
// caller's container; under sudo an image is a registry reference alone.
TEST(SudoRules, AnImageIsARegistryReferenceNotAnEnginesTransport) {
  for (const char* image : {"oci-archive:/home/bob/private.tar", "dir:/root/img", "docker-archive:/etc/x.tar",
                            "containers-storage:[overlay@/other/root]img", "docker-daemon:img:1", "docker://alpine",
                            "Alpine", "img:tag:more", "/abs/path", "dir:0/root/img", "[::1/x", "[]:5000/img",
                            "[dir:/root]/img", "oci-archive:0/x.tar", "OCI:1/x", "tarball:1/x"}) {
    Options o = caller_options({});
    o.image = image;
    const auto e = test::caught_error([&] { enforce_caller_rules(o, false); });
    EXPECT_EQ(e.exit_code, 125) << image;
    EXPECT_THAT(e.message, HasSubstr("a registry reference, [REGISTRY/]NAME[:TAG][@DIGEST]")) << image;
  }
  for (const char* image :
       {"alpine", "alpine:3.20", "nvcr.io/nvidia/pytorch:24.05-py3", "localhost:5000/me/img",
        "registry.lab.example.org:443/team/train_v2:v1.0", "[::1]:5000/me/img", "[fd00:1::5]/team/img:1",
        "me/img@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
    Options o = caller_options({});
    o.image = image;
    enforce_caller_rules(o, false);
  }
}

TEST(SudoRules, LowHostPortsAndSnapshotsForALaunchAreRefused) {
  Options o = caller_options({});
  o.publish = {"127.0.0.1:22:22"};
  EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message, HasSubstr("below 1024"));
  o.publish = {"2222:22"};
  o.from_csv = "snap.csv";
  EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message, HasSubstr("--from-csv"));
  enforce_caller_rules(o, true);  // a dry run may read a snapshot
}

TEST(SudoRules, AnEnvironmentVariableWithoutAValueIsRefusedSayingHowToPassIt) {
  Options o = caller_options({});
  o.env = {"HF_TOKEN"};
  const auto e = test::caught_error([&] { enforce_caller_rules(o, false); });
  EXPECT_EQ(e.message,
            "not allowed under sudo: -e \"HF_TOKEN\" without a value: sudo reset the environment, so the job would "
            "get root's value, not yours; write -e HF_TOKEN=VALUE (-e HF_TOKEN=\"$HF_TOKEN\" passes yours)");
  o.env = {"HF_TOKEN=abc", "EMPTY="};
  EXPECT_NO_THROW(enforce_caller_rules(o, false));
  o.env = {};
  o.docker_opts = {"-e", "HF_TOKEN"};
  EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message,
              HasSubstr("docker option \"-e HF_TOKEN\" without a value"));
  o.docker_opts = {"--env=A=1"};
  EXPECT_NO_THROW(enforce_caller_rules(o, false));
  o.docker_opts = {"--pids-limit=4096"};  // a limit of its own (refused: 0 and -1, which lift it)
  EXPECT_NO_THROW(enforce_caller_rules(o, false));
}

TEST(SudoRules, ARefusalTheAdminCouldLiftSaysSoAndOneThatGivesRootDoesNot) {
  EXPECT_EQ(refusal({"--ipc=host"}),
            "not allowed under sudo: docker option \"--ipc=host\": allowed only as private, shareable or none; the "
            "admin may allow it by adding \"--ipc=host\" to \"allowed_docker_options\" in /etc/gpurun/config.json");
  EXPECT_THAT(refusal({"--ulimit", "memlock=-1"}), HasSubstr("the admin may allow it"));
  EXPECT_THAT(refusal({"--privileged"}), Not(HasSubstr("admin")));
  EXPECT_THAT(refusal({"--cap-add=SYS_ADMIN"}), Not(HasSubstr("admin")));
}

TEST(SudoRules, RefusalsAreRefusalsForTheSystemLog) {
  Options o = caller_options({"--privileged"});
  EXPECT_THROW(enforce_caller_rules(o, false), Refusal);
}

TEST(SudoRules, SlurmJobsAreNotStartedAsRoot) {
  Options o = caller_options({});
  o.backend = Backend::slurm;
  const auto e = test::caught_error([&] { enforce_caller_rules(o, true); });
  EXPECT_EQ(e.message,
            "not allowed under sudo: backend slurm: a Slurm job started under sudo would run as root; "
            "run gpurun without sudo for the cluster (Slurm runs the job as you)");
  EXPECT_EQ(e.exit_code, 125);
}

TEST(SudoRules, WithoutSudoNothingIsChecked) {
  Options o;
  o.docker_opts = {"--privileged"};
  enforce_caller_rules(o, false);
}

TEST(SudoRules, TheCanonicalSpellingIsDockersLongOne) {
  const auto args = caller_docker_args({"-itv", "/a:/b", "--mount", "type=bind,src=/x,dst=/y"});
  std::vector<std::string> words;
  for (const DockerArg& a : args) words.push_back(canonical(a));
  EXPECT_THAT(words,
              ::testing::ElementsAre("--interactive", "--tty", "--volume=/a:/b", "--mount=type=bind,src=/x,dst=/y"));
}

// Property: --mount's verdict does not depend on the order of its keys, nor on the spelling of
// the option (--mount=v, --mount v).
TEST(SudoRules, MountKeyOrderAndSpellingDoNotChangeTheVerdict) {
  for (const auto& [fields, allowed] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{"type=bind", "src=/data", "dst=/d"}, true},
           {{"type=tmpfs", "dst=/t", "tmpfs-size=1g"}, true},
           {{"type=volume", "src=shared", "dst=/d"}, false},
           {{"src=/data", "dst=/d", "readonly"}, false},  // no type: a named volume to docker
           {{"type=bind", "src=/data", "dst=/d", "volume-nocopy"}, false},
           // docker reads the keys in any case: a key in capitals is the same key
           {{"TYPE=BIND", "SRC=/data", "Target=/d", "RO"}, true},
           {{"type=bind", "Type=volume", "Src=othervol", "dst=/x"}, false},  // docker keeps the last type
           {{"type=bind", "src=/data", "dst=/d", "Volume-opt=device=/x"}, false},
           {{"type=tmpfs", "dst=/t", "Source=/data"}, false},
           // what has root do more than mount: propagation back to the host, podman's chown and idmap
           {{"type=bind", "src=/data", "dst=/d", "bind-propagation=rshared"}, false},
           {{"type=bind", "src=/data", "dst=/d", "U=true"}, false},
           {{"type=bind", "src=/data", "dst=/d", "idmap"}, false}}) {
    std::vector<std::string> order = fields;
    std::sort(order.begin(), order.end());
    do {
      std::string value;
      for (const std::string& f : order) value += (value.empty() ? "" : ",") + f;
      for (const std::vector<std::string>& words :
           std::vector<std::vector<std::string>>{{"--mount", value}, {"--mount=" + value}}) {
        Options o = caller_options(words);
        if (allowed) {
          enforce_caller_rules(o, false);
        } else {
          EXPECT_THAT(test::caught_error([&] { enforce_caller_rules(o, false); }).message, HasSubstr("--mount"))
              << value;
        }
      }
    } while (std::next_permutation(order.begin(), order.end()));
  }
}

// A refused host path is checked again against the real paths the caller's mounts were pinned
// at: a symlink swapped after the check of the typed path reached it.
TEST(Policy, ARefusedHostPathIsCheckedAgainstWhatWasPinned) {
  SitePolicy policy;
  policy.refused_docker_options = {"-v /srv/licensed"};
  check_mounted_sources(policy, {"/home/alice/data", "/srv/licensed-not"});
  const auto e = test::caught_error([&] { check_mounted_sources(policy, {"/home/alice", "/srv/licensed/set"}); });
  EXPECT_EQ(e.exit_code, 125);
  EXPECT_THAT(e.message, HasSubstr("real path is /srv/licensed/set"));
  EXPECT_THAT(e.message, HasSubstr("-v /srv/licensed"));
}

TEST(Policy, GpuSelectingVariablesAreRefusedEverywhere) {
  for (const char* item : {"NVIDIA_VISIBLE_DEVICES=all", "nvidia_visible_devices=0", "NVIDIA_VISIBLE_DEVICES",
                           "NVIDIA_MIG_CONFIG_DEVICES=all", "NVIDIA_IMEX_CHANNELS=0"})
    EXPECT_TRUE(gpu_selecting_env(item)) << item;
  for (const char* item : {"CUDA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all", "A=NVIDIA_VISIBLE_DEVICES"})
    EXPECT_FALSE(gpu_selecting_env(item)) << item;
  Options o;  // no caller: sudo or not
  o.docker_opts = {"-eNVIDIA_VISIBLE_DEVICES=all"};
  EXPECT_THAT(test::caught_error([&] { enforce_policy(o); }).message, HasSubstr("outside its reservation"));
  o.docker_opts = {};
  o.env = {"NVIDIA_VISIBLE_DEVICES=3"};
  EXPECT_THAT(test::caught_error([&] { enforce_policy(o); }).message, HasSubstr("outside its reservation"));
  // docker's own ways to name GPUs: what `docker run --gpus all` users type first.
  o.env = {};
  for (const std::vector<std::string>& opts : std::vector<std::vector<std::string>>{
           {"--gpus=all"}, {"--gpus", "device=3"}, {"--device=/dev/nvidia3"}, {"--device", "nvidia.com/gpu=all"}}) {
    o.docker_opts = opts;
    EXPECT_THAT(test::caught_error([&] { enforce_policy(o); }).message, HasSubstr("outside its reservation"))
        << opts.front();
  }
  for (const char* device : {"--device=/dev/nvidia-uvm", "--device=/dev/nvidiactl", "--device=/dev/fuse"}) {
    o.docker_opts = {device};
    EXPECT_NO_THROW(enforce_policy(o)) << device;
  }
  // The toolkit's device list as volume mounts (accept-nvidia-visible-devices-as-volume-mounts).
  for (const std::vector<std::string>& opts : std::vector<std::vector<std::string>>{
           {"--tmpfs=/run/nvidia-container-devices/GPU-x"},
           {"--tmpfs", "/var/run/nvidia-container-devices/all:size=1k"},
           {"-v", "/tmp:/var/run/nvidia-container-devices/all"},
           {"-v/tmp://var/run/./nvidia-container-devices/0:ro"},
           {"--mount", "type=tmpfs,dst=/var/run/nvidia-container-devices/1"},
           {"--mount=type=bind,src=/tmp,target=/run/x/../nvidia-container-devices/2"},
           {"--mount=type=bind,source=/dev/null,Target=/var/run/nvidia-container-devices/all"},  // docker lowercases
                                                                                                 // keys
           {"--mount=type=bind,source=/dev/null,dst=/data,dst=/var/run/nvidia-container-devices/all"},  // the last
                                                                                                        // counts
           {"--mount=type=tmpfs,\"dst=/var/run/nvidia-container-devices/all\""}}) {                     // CSV, quoted
    o.docker_opts = opts;
    EXPECT_THAT(test::caught_error([&] { enforce_policy(o); }).message, HasSubstr("outside its reservation"))
        << opts.back();
  }
  o.docker_opts = {};
  o.volumes = {"/data:/var/run/nvidia-container-devices/all"};
  EXPECT_THAT(test::caught_error([&] { enforce_policy(o); }).message, HasSubstr("outside its reservation"));
  o.volumes = {"/data:/data", "/var/run/nvidia-container-devices:/host-list:ro"};  // a source there is no choice
  EXPECT_NO_THROW(enforce_policy(o));
}

TEST(Policy, AllowedImagesAreShellWildcards) {
  SitePolicy p;
  EXPECT_TRUE(image_allowed(p, "anything"));
  p.allowed_images = std::vector<std::string>{"nvcr.io/nvidia/*"};
  EXPECT_TRUE(image_allowed(p, "nvcr.io/nvidia/pytorch:24.05-py3"));
  EXPECT_FALSE(image_allowed(p, "docker.io/evil/nvcr.io/nvidia/x"));
}

}  // namespace
}  // namespace gpurun

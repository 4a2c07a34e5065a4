// Unit tests for the Slurm OCI bundle's config.json (slurm/slurm_oci.hpp): the job's variables go
// into the file, over the image's, and never onto srun's command line.
#include "slurm_oci.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpurun {
namespace {

using ::testing::ElementsAre;

TEST(OciJobConfig, TheJobsVariablesAreInTheFileOverTheImages) {
  const nlohmann::json image = {{"process", {{"env", {"PATH=/usr/bin", "HF_TOKEN=image", "LANG=C"}}}}};
  OciJobSpec spec;
  spec.workdir = "/work";
  spec.env = {"HF_TOKEN=secret", "MODE=oci"};
  const nlohmann::json config = oci_job_config(image, spec);
  EXPECT_THAT(config["process"]["env"].get<std::vector<std::string>>(),
              ElementsAre("PATH=/usr/bin", "LANG=C", "HF_TOKEN=secret", "MODE=oci"));
}

}  // namespace
}  // namespace gpurun

// Unit tests for the account files read without NSS: an answer only where NSS's files source
// would give the same one, nullopt (ask NSS) wherever that is not certain.
#include "files_database.hpp"

#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>

#include <string>

namespace gpurun::files_database {
namespace {

using namespace std::string_view_literals;

TEST(FilesDatabase, FilesFirstOnlyWhenTheDatabasesOneLineStartsWithFiles) {
  const std::string debian =
      "# /etc/nsswitch.conf\n\npasswd:         files systemd\ngroup:          files systemd\n"
      "hosts:          files dns\n";
  EXPECT_TRUE(files_answer_first(debian, "group"));
  EXPECT_TRUE(files_answer_first(debian, "passwd"));
  EXPECT_TRUE(files_answer_first("group: files\n", "group"));
  EXPECT_TRUE(files_answer_first("  group:files sss # LDAP after\n", "group"));
  EXPECT_TRUE(files_answer_first("group:\tfiles\tsss", "group"));                        // no newline at the end
  EXPECT_TRUE(files_answer_first("group files sss\n", "group"));                         // glibc needs no ':'
  EXPECT_TRUE(files_answer_first("Group: sss\n# group: sss\ngroup: files\n", "group"));  // not group's lines
}

TEST(FilesDatabase, AnythingElseIsLeftToNss) {
  EXPECT_FALSE(files_answer_first("group: sss files\n", "group"));
  EXPECT_FALSE(files_answer_first("group: compat\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files [SUCCESS=merge] sss\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files [SUCCESS=continue] ldap\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files[NOTFOUND=return]\n", "group"));
  EXPECT_FALSE(files_answer_first("group: filesystem\n", "group"));
  EXPECT_FALSE(files_answer_first("group:\n", "group"));
  EXPECT_FALSE(files_answer_first("passwd: files\n", "group"));  // no line for it: NSS's default
  EXPECT_FALSE(files_answer_first("", "group"));
  EXPECT_FALSE(files_answer_first("group: files\ngroup: sss\n", "group"));  // twice: which one counts
  EXPECT_FALSE(files_answer_first("Group: files\n", "group"));              // glibc's names are case-sensitive
  EXPECT_FALSE(files_answer_first("# group: files\n", "group"));
  // glibc 2.36 strips no comments: "files#x" is another service.
  EXPECT_FALSE(files_answer_first("group: files#x\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files \v[SUCCESS=merge] sss\n", "group"));
  // A second line for group, in glibc's eyes, with or without a ':' or a source.
  EXPECT_FALSE(files_answer_first("group: files\ngroup sss\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files\ngroup\n", "group"));
  EXPECT_FALSE(files_answer_first("group: files\n\0group: sss\n"sv, "group"));
}

TEST(FilesDatabase, FindsAGroupsIdByItsFirstLine) {
  const std::string group = "root:x:0:\n# a comment\n\ndocker:x:107:ann,bob\nlab:x:2000\ndocker:x:999:\n";
  EXPECT_EQ(group_id_in(group, "root"), 0u);
  EXPECT_EQ(group_id_in(group, "docker"), 107u);
  EXPECT_EQ(group_id_in(group, "lab"), 2000u);  // no member list, no ':' after the gid
  EXPECT_EQ(group_id_in(group, "absent"), std::nullopt);
  EXPECT_EQ(group_id_in(group, "dock"), std::nullopt);
  EXPECT_EQ(group_id_in(group, ""), std::nullopt);
  EXPECT_EQ(group_id_in("", "root"), std::nullopt);
}

TEST(FilesDatabase, AGroupAfterALineNssMightReadOtherwiseIsLeftToNss) {
  for (const char* odd : {"odd:x:-1:\n", "odd:x: 5:\n", "odd:x:+5:\n", "odd:x:5a:\n", "odd:x::\n", "odd\n", ":x:5:\n",
                          "odd:x:4294967295:\n", "odd:x:99999999999:\n", "odd:x:5\r\n"})
    EXPECT_EQ(group_id_in(std::string(odd) + "docker:x:107:\n", "docker"), std::nullopt) << odd;
  EXPECT_EQ(group_id_in("docker:x:107:\nodd\n", "docker"), 107u);  // after the answer: never read
}

// Lines glibc reads otherwise than a plain split would: indented ones (at the end of the file
// without '\n', glibc's own strip gets `  lab:x:2000` as gid 200000), compat's + and - entries,
// which it never matches, and a NUL byte, where its strings end.
TEST(FilesDatabase, LinesGlibcReadsItsOwnWayAreLeftToNss) {
  EXPECT_EQ(group_id_in("root:x:0:\n  lab:x:2000", "lab"), std::nullopt);
  EXPECT_EQ(group_id_in("\vdocker:x:107:\ndocker:x:999:\n", "docker"), std::nullopt);
  EXPECT_EQ(group_id_in("+plus:x:77:\n", "+plus"), std::nullopt);
  EXPECT_EQ(group_id_in("-minus:x:78:\n", "-minus"), std::nullopt);
  EXPECT_EQ(group_id_in("+:::\ndocker:x:107:\n", "docker"), std::nullopt);
  EXPECT_EQ(group_id_in("docker:x\0:107:\n"sv, "docker"), std::nullopt);
  EXPECT_EQ(login_name_in("+ann:x:1000:1000::/home/ann:/bin/sh\n", 1000), std::nullopt);
  EXPECT_EQ(login_name_in("ann\0x:x:1001:1001::/h:/s\n"sv, 1001), std::nullopt);
  EXPECT_EQ(login_name_in(" ann:x:1001:1001::/h:/s\n", 1001), std::nullopt);
}

TEST(FilesDatabase, FindsALoginNameByItsUidsFirstLine) {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/bash\n# c\nann:x:1000:1000:Ann,,,:/home/ann:/bin/bash\n"
      "alias:x:1000:1000::/home/ann:/bin/sh\n";
  EXPECT_EQ(login_name_in(passwd, 0), "root");
  EXPECT_EQ(login_name_in(passwd, 1000), "ann");
  EXPECT_EQ(login_name_in(passwd, 1001), std::nullopt);
  for (const char* odd : {"odd:x:5:5:/home/odd:/bin/sh\n", "odd:x:5:5::/h:/bin/sh:more\n", "odd:x:5:g::/h:/s\n",
                          ":x:5:5::/h:/s\n", "odd:x:-5:5::/h:/s\n"})
    EXPECT_EQ(login_name_in(std::string(odd) + passwd, 1000), std::nullopt) << odd;
}

// On this machine's own files: wherever an answer is given, it is NSS's.
TEST(FilesDatabase, AgreesWithNssOnThisMachine) {
  setgrent();
  for (const group* entry = getgrent(); entry != nullptr; entry = getgrent()) {
    const auto gid = group_id(entry->gr_name);
    if (!gid) continue;
    const group* looked_up = getgrnam(entry->gr_name);
    ASSERT_NE(looked_up, nullptr) << entry->gr_name;
    EXPECT_EQ(*gid, looked_up->gr_gid) << entry->gr_name;
  }
  endgrent();
  const auto root = login_name(0);
  const passwd* entry = getpwuid(0);
  ASSERT_NE(entry, nullptr);
  if (root) {
    EXPECT_EQ(*root, entry->pw_name);
  }
}

}  // namespace
}  // namespace gpurun::files_database

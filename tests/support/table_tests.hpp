// One Catch2 test case per row of a table, all run by one test body: each
// row keeps its own name and tags (as a TEST_CASE of its own would have
// them), so `--list-tests`, filters and failures name the row.
//
//   const my_row rows[] = {{"name", "[tags]", __LINE__, ...}, ...};
//   void check(const my_row& r) { CHECK(...); }
//   const ringfeed::test::table_tests<my_row> registered{rows, check, __FILE__};
//
// A row needs `const char* name`, `const char* tags` and `int line` (where a
// failure before the first assertion is reported). Registration happens
// during static initialization, in the order of the rows, where the
// `table_tests` object is defined: define it after the table it names.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <span>

namespace ringfeed::test {

template <typename Row>
class table_tests {
 public:
  using body = void (*)(const Row&);

  template <std::size_t N>
  table_tests(const Row (&rows)[N], body run, const char* file) {
    for (const Row& r : std::span<const Row>(rows, N)) {
      // Catch owns the invoker (a shared_ptr in the registered test case).
      Catch::AutoReg(new row_invoker(r, run), Catch::SourceLineInfo(file, static_cast<std::size_t>(r.line)),
                     Catch::StringRef(), Catch::NameAndTags(r.name, r.tags));
    }
  }

 private:
  class row_invoker final : public Catch::ITestInvoker {
   public:
    row_invoker(const Row& row, body run) : m_row(row), m_run(run) {}
    void invoke() const override { m_run(m_row); }

   private:
    const Row& m_row;
    body m_run;
  };
};

}  // namespace ringfeed::test

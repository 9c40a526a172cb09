// ops_doc: prints docs/ops.md (kernels/spec/registry_doc.hpp).
//   build/kernels/ops_doc > docs/ops.md
#include <exception>
#include <iostream>

#include "kernels/spec/registry_doc.hpp"

int main() {
  try {
    std::cout << tilesim::ops_doc_markdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ops_doc: " << e.what() << "\n";
    return 2;
  }
}

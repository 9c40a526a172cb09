// hardware_doc: prints docs/hardware.md (model/hardware_doc.hpp).
//   build/model/hardware_doc > docs/hardware.md
#include <exception>
#include <iostream>

#include "model/hardware_doc.hpp"

int main() {
  try {
    std::cout << tilesim::shipped_hardware_doc();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hardware_doc: " << e.what() << "\n";
    return 2;
  }
}

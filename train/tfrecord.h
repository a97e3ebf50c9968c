// TFRecord framing, the container of TensorBoard's event files (train/summary.h): each record is
//   uint64 length | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// all little-endian. CRC-32C is the Castagnoli polynomial (iSCSI's, reflected 0x82F63B78), and the
// mask rotates the CRC right by 15 bits and adds 0xa282ead8, as TensorFlow's record writer does so
// that a CRC stored inside CRC'd data does not checksum to a fixed value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fluxion::tfrecord {

/// CRC-32C of n bytes (crc32c("123456789") == 0xE3069283).
uint32_t crc32c(const void* data, size_t n);
/// The masked form stored in a record.
uint32_t masked_crc32c(const void* data, size_t n);
/// One record around `data`.
std::string frame(std::string_view data);

}  // namespace fluxion::tfrecord

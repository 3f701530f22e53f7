"""The mesh: which block of each tensor a device holds, memory per device, what an update moves."""

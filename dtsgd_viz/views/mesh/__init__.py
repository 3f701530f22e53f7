"""The mesh: which block of each tensor a device holds, the memory plan and what an update
moves between devices."""

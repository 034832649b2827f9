"""The data writer: documents -> pairs or packed instances -> masking ->
serialized records, by blocks drawn from the whole input; its seeds, its
scratch token cache, its tool-side checks and its Beam driver."""

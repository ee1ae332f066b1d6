"""Generated gRPC stubs of ``proto/riffle/v1`` (built by ``riffle.proto_build`` at install time)."""

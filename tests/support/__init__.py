"""What the tests share: fakes (one module), documents, the chunking contract, the loopback servers."""

"""An application with no otel-agents code: two litellm calls, traced by whatever opentelemetry-instrument loads."""

import os
import sys

import litellm

for question in sys.argv[1:]:
    reply = litellm.completion(  # through the module attribute, which the instrumentation wraps
        model="openai/test-model", api_base=os.environ["APP_API_BASE"], api_key="sk-test",
        messages=[{"role": "user", "content": question}], num_retries=0,
    )
    print(reply.choices[0].message.content)

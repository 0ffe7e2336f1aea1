# zkbroker image for docker-compose users; ZooKeeper runs in its own container.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY handlers ./handlers
COPY zk_layout ./zk_layout
RUN pip install --no-cache-dir .
EXPOSE 9092 9093 9094
ENTRYPOINT ["zkbroker"]

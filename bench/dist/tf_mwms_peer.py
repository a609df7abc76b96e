"""One worker of TensorFlow's MultiWorkerMirroredStrategy (ring all-reduce over gRPC, CPU, 1 thread) training a
bench model on Fashion-MNIST in memory with Adam 1e-3 on the global batch, in a custom loop. TF_CONFIG names the
workers. Worker 0 prints the job's steady-state samples/s (the steps after the first 20)."""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pipeline"))
import fashion_mnist  # noqa: E402
import models  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["cnn", "large"], required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--global-batch", type=int, default=128)
    a = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    tf.keras.utils.set_random_seed(42)
    x, y = fashion_mnist.load("train")
    x = (x[..., None] / 255.0).astype("float32")
    # A custom loop under strategy.run, TensorFlow's documented multi-worker path: Keras 3's model.fit does not
    # accept MultiWorkerMirroredStrategy's per-replica batches.
    with strategy.scope():
        model = models.keras_model(a.model)
        optimizer = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = tf.data.Dataset.from_tensor_slices((x, y.astype("int32"))).repeat().batch(a.global_batch).with_options(options)
    batches = iter(strategy.experimental_distribute_dataset(ds))

    def replica_step(images, labels):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(labels, model(images, training=True)),
                                              global_batch_size=a.global_batch)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    @tf.function
    def step(iterator):
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, args=next(iterator)), axis=None)

    times = []
    for _ in range(a.steps):
        step(batches).numpy()
        times.append(time.perf_counter())
    if json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 0:
        times = times[20:]
        steady = (len(times) - 1) * a.global_batch / (times[-1] - times[0])
        print(json.dumps({"samples_per_s": steady, "tensorflow": tf.__version__}))

if __name__ == "__main__":
    main()
